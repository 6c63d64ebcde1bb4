// truncate shortens str as test/truncate.test.js describes.
function truncate(str, n) {
  if (str.length <= n) return str;
  return str.slice(0, Math.max(0, n - 1)) + '…';
}

module.exports = { truncate };
