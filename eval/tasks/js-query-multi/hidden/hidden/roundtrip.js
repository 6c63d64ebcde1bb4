const assert = require('assert');
const { build } = require('../build');
const { parse } = require('../parse');

const p = { q: 'a&b c', 'k=1': 'ü/?' };
assert.deepStrictEqual(parse(build(p)), p);
assert.deepStrictEqual(parse('x=a%20b'), { x: 'a b' });
