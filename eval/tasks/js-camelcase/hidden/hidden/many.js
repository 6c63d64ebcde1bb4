const assert = require('assert');
const { toCamel } = require('../camel');

assert.strictEqual(toCamel('max-line-length'), 'maxLineLength');
