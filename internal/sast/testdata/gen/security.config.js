// Fixture-generation stand-in for /opt/quavon/eslint/security.config.js.
const security = require("eslint-plugin-security");
module.exports = [
  security.configs.recommended,
  { rules: { "no-eval": "error", "no-implied-eval": "error", "no-new-func": "warn" } },
];
