const assert = require('assert');
const { total } = require('../cart');

assert.ok(Math.abs(total([{ price: '4.99' }, { price: '0.50' }]) - 5.49) < 1e-9);
