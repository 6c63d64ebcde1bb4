const assert = require('assert');
const { range } = require('../range');

assert.deepStrictEqual(range(0, 3), [0, 1, 2]);
assert.deepStrictEqual(range(3, 3), []);
