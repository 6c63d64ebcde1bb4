const assert = require('assert');
const { toCamel } = require('../camel');

assert.strictEqual(toCamel('font-size'), 'fontSize');
assert.strictEqual(toCamel('plain'), 'plain');
