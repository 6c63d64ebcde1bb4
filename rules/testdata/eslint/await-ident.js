var await = 1;
var yield = 2;
console.log(await + yield);
