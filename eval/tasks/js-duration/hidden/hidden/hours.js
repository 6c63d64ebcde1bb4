const assert = require('assert');
const { formatDuration } = require('../duration');

assert.strictEqual(formatDuration(3665), '1:01:05');
assert.strictEqual(formatDuration(7200), '2:00:00');
