// A small web handler with the mistakes the scanners exist for (Quavon demo corpus).
const child_process = require("child_process");
const fs = require("fs");

function archive(req, res) {
  child_process.exec("tar czf /tmp/out.tgz " + req.query.dir, (err) => {
    res.end(err ? "failed" : "ok");
  });
}

function calc(req, res) {
  res.end(String(eval(req.query.expr)));
}

function readUserFile(req, res) {
  fs.readFile(req.query.path, (err, data) => res.end(data));
}

function render(el, html) {
  el.innerHTML = html;
}

module.exports = { archive, calc, readUserFile, render };
