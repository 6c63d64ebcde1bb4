const assert = require('assert');
const { parse } = require('../table');

assert.deepStrictEqual(parse('a,b\r\nc,d\r\n'), [['a', 'b'], ['c', 'd']]);
