const assert = require('assert');
const { total } = require('../cart');

assert.strictEqual(total([]), 0);
assert.strictEqual(total([{ price: '3' }]), 3);
