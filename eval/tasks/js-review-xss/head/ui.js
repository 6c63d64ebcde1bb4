export function title(page) {
  return `Quavon · ${page}`;
}

export function showName(el, name) {
  el.innerHTML = `<b>Hello ${name}</b>`;
}

export function initials(name) {
  return name.split(" ").map((p) => p[0]).join("");
}
