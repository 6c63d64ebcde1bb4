<!-- old browsers
var x = 1;
// -->
