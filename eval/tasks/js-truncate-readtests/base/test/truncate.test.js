const assert = require('assert');
const { truncate } = require('../truncate');

assert.strictEqual(truncate('short', 10), 'short');
// The result, the ellipsis included, is never longer than n.
assert.strictEqual(truncate('abcdefgh', 5), 'abcd…');
