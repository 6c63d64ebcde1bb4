// leftPad pads str on the left with ch up to len characters.
function leftPad(str, len, ch = " ") {
  str = String(str);
  const n = len - str.length;
  return n > 0 ? ch.repeat(n) + str : str;
}

module.exports = { leftPad };
