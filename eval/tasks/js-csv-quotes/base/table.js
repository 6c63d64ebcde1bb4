const { parseLine } = require('./parse');

// parse turns CSV text into rows of fields (one row per line, blank lines skipped).
function parse(text) {
  return text.split('\n').filter((l) => l !== '').map(parseLine);
}

module.exports = { parse };
