const assert = require('assert');
const { build } = require('../build');
const { parse } = require('../parse');

assert.strictEqual(build({ a: '1', b: '2' }), 'a=1&b=2');
assert.deepStrictEqual(parse('a=1&b=2'), { a: '1', b: '2' });
