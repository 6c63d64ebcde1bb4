const fs = require('fs');
const path = require('path');
let failed = 0;
for (const f of fs.readdirSync(__dirname).filter((f) => f.endsWith('.test.js'))) {
  try {
    require(path.join(__dirname, f));
    console.log('ok ' + f);
  } catch (e) {
    failed++;
    console.log('not ok ' + f + ': ' + e.message);
  }
}
process.exit(failed ? 1 : 0);
