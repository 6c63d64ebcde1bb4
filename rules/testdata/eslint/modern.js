class A { static #count = 0; #x = 1; static { A.#count++; } has(o) { return #x in o; } }
const re = /[\p{L}--\p{Ll}]/v;
const v = a?.b ?? c;
let x = 1; x ||= 2; x &&= 3; x ??= 4;
const big = 10n ** 2n;
export { A, re, v, big };
