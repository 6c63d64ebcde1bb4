const assert = require('assert');
const { leftPad } = require('../pad');

assert.strictEqual(leftPad('5', 3, '0'), '005');
assert.strictEqual(leftPad('ab', 4), '  ab');
