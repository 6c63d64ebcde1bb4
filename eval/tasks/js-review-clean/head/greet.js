const GREETING = "Hello";

export function greet(name) {
  return `${GREETING}, ${name}!`;
}
