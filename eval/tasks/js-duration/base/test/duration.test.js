const assert = require('assert');
const { formatDuration } = require('../duration');

assert.strictEqual(formatDuration(75), '1:15');
