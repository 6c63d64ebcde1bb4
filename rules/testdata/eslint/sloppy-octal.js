var mode = 0755;
fs.chmodSync("x", mode);
