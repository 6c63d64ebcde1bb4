export function title(page) {
  return `Quavon - ${page}`;
}
