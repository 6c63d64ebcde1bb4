// Fixture-generation stand-in for /opt/quavon/ruff/check.mjs: runs Ruff
// (WebAssembly build) on each file and writes Ruff CLI's
// `--output-format json` shape (filename absolute, as the CLI writes it).
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { Workspace, PositionEncoding } from "@astral-sh/ruff-wasm-nodejs";
const args = process.argv.slice(2);
const out = args[args.indexOf("--output") + 1];
const files = args.slice(args.indexOf("--") + 1);
const ws = new Workspace({ lint: { select: ["S"] } }, PositionEncoding.Utf16);
const res = [];
for (const f of files) {
  for (const d of ws.check(readFileSync(f, "utf8"))) {
    res.push({
      cell: null,
      code: d.code,
      end_location: d.end_location,
      filename: resolve(f),
      fix: d.fix ? { applicability: "unsafe", edits: d.fix.edits, message: d.fix.message } : null,
      location: d.start_location,
      message: d.message,
      noqa_row: d.start_location.row,
      url: null, // the WebAssembly build does not expose rule names
    });
  }
}
writeFileSync(out, JSON.stringify(res, null, 2) + "\n");
console.error(`ruff ${Workspace.version()}`);
