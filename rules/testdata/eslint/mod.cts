import fs = require("fs");
export = fs;
