import fs from "node:fs";
export const read = (p) => fs.readFileSync(p, "utf8");
export default async function main() { await Promise.resolve(1); }
