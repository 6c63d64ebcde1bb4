// parseLine splits one CSV line into fields.
function parseLine(line) {
  return line.split(',');
}

module.exports = { parseLine };
