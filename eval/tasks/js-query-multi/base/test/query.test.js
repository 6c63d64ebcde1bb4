const assert = require('assert');
const { build } = require('../build');

assert.strictEqual(build({ a: '1', b: '2' }), 'a=1&b=2');
