// formatDuration formats seconds as h:mm:ss (or m:ss under an hour).
function formatDuration(seconds) {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  const ss = String(s).padStart(2, '0');
  if (h > 0) {
    return h + ':' + String(m).padStart(2, '0') + ':' + ss;
  }
  return m + ':' + ss;
}

module.exports = { formatDuration };
