var package = require("./package.json");
var interface = package.name;
function f(private, public) { return private + public; }
module.exports = { interface: interface };
