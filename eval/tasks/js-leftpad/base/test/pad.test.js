const assert = require('assert');
const { leftPad } = require('../pad');

assert.strictEqual(leftPad('abc', 2), 'abc');
