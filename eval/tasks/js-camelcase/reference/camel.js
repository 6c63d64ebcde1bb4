// toCamel turns kebab-case into camelCase.
function toCamel(s) {
  return s.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
}

module.exports = { toCamel };
