// build makes a query string of params (an object of strings).
function build(params) {
  return Object.keys(params)
    .map((k) => encodeURIComponent(k) + '=' + encodeURIComponent(params[k]))
    .join('&');
}

module.exports = { build };
