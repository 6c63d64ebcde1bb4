// toCamel turns kebab-case into camelCase.
function toCamel(s) {
  return s.replace(/-([a-z])/, (_, c) => c.toUpperCase());
}

module.exports = { toCamel };
