const assert = require('assert');
const { parse } = require('../table');

assert.deepStrictEqual(parse('"Smith, John",42\n'), [['Smith, John', '42']]);
assert.deepStrictEqual(parse('"say ""hi""",x\n'), [['say "hi"', 'x']]);
