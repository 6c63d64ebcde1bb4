const assert = require('assert');
const { truncate } = require('../truncate');

for (const n of [1, 3, 6]) {
  assert.ok(truncate('abcdefghij', n).length <= n);
}
assert.strictEqual(truncate('abcdefgh', 5), 'abcd…');
