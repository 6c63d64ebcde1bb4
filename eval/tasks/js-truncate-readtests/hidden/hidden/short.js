const assert = require('assert');
const { truncate } = require('../truncate');

assert.strictEqual(truncate('short', 10), 'short');
assert.strictEqual(truncate('exact', 5), 'exact');
