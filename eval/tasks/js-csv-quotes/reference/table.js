const { parseLine } = require('./parse');

// parse turns CSV text into rows of fields (one row per line, CRLF or LF,
// blank lines skipped).
function parse(text) {
  return text.split(/\r?\n/).filter((l) => l !== '').map(parseLine);
}

module.exports = { parse };
