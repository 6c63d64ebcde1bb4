#!/usr/bin/env node
console.log(process.argv);
