// parse reads a query string into an object of strings.
function parse(qs) {
  const out = {};
  for (const part of qs.split('&')) {
    if (part === '') continue;
    const i = part.indexOf('=');
    out[part.slice(0, i)] = part.slice(i + 1);
  }
  return out;
}

module.exports = { parse };
