export function f() { using res = getResource(); return res.value; }
