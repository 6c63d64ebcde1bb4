const assert = require('assert');
const { total } = require('../cart');

assert.strictEqual(total([]), 0);
