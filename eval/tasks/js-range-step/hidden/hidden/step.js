const assert = require('assert');
const { range } = require('../range');

assert.deepStrictEqual(range(0, 10, 3), [0, 3, 6, 9]);
assert.deepStrictEqual(range(5, 0, -2), [5, 3, 1]);
assert.throws(() => range(0, 1, 0), RangeError);
