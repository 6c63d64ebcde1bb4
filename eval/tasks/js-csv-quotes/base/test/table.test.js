const assert = require('assert');
const { parse } = require('../table');

assert.deepStrictEqual(parse('a,b\nc,d\n'), [['a', 'b'], ['c', 'd']]);
