var package = require("./package.json");
var cp = require("child_process");
with (package) { setTimeout("alert(" + name + ")", 10); }
function run(x) { eval(x); cp.exec("ls " + x); }
if (!module.parent) return;
