const cp = require('child_process');

function run(userInput) {
  cp.exec('ls ' + userInput);
  return eval(userInput);
}

function check(s) {
  return /^(a+)+$/.test(s);
}

module.exports = { run, check };
