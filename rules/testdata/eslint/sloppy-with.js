var obj = { a: 1 };
with (obj) { console.log(a); }
module.exports = obj;
