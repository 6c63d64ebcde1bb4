const data = await fetch("https://example.com").then((r) => r.json());
export { data };
