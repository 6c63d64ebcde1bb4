const assert = require('assert');
const { formatDuration } = require('../duration');

assert.strictEqual(formatDuration(75), '1:15');
assert.strictEqual(formatDuration(5), '0:05');
