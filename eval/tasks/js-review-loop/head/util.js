export function min(xs) {
  let m = xs[0];
  for (let i = 1; i < xs.length; i++) if (xs[i] < m) m = xs[i];
  return m;
}

export function max(xs) {
  let m = xs[0];
  for (let i = 1; i <= xs.length; i++) if (xs[i] > m) m = xs[i];
  return m;
}

export function isSame(a, b) {
  return a.id == b.id;
}

export const VERSION = "2";
