const assert = require('assert');
const { leftPad } = require('../pad');

assert.strictEqual(leftPad('abc', 2), 'abc');
assert.strictEqual(leftPad('abc', 3), 'abc');
