#!/usr/bin/env node
// Ruff for the scanners sandbox image, run as WebAssembly (@astral-sh/ruff-wasm-nodejs):
//
//   node /opt/quavon/ruff/check.mjs --output OUT FILE...
//   node /opt/quavon/ruff/check.mjs --version
//
// Why a wrapper and not the ruff binary: the wasm build has no file system access and no
// configuration discovery, so only Quavon's settings (settings.json beside this file) apply.
// A repository's ruff.toml, pyproject.toml, per-file-ignores or extend cannot turn a rule off.
// Suppression comments are neutralised in memory before the check (our --ignore-noqa):
// every "noqa" inside a comment, and the verb of "ruff: disable[...]" / "ruff: enable[...]",
// becomes spaces of the same length, so rows and columns do not move.
//
// settings.json selects flake8-bandit (S) plus E722 (bare except), B012 (return/break in
// finally swallows the exception) and PLW1509 (subprocess preexec_fn, unsafe with threads).
//
// OUT is a JSON array in the shape of `ruff check --output-format json` (cell, code,
// end_location, filename as given, fix, location, message, noqa_row, url); columns count
// Unicode code points as the CLI does. Differences from the CLI: fix and noqa_row are always
// null, url is null except for E902 (the wasm API does not expose rule names), and a
// syntax error has code null. A file that cannot be read, is over 1 MiB, is not a regular
// file or is not UTF-8 becomes an E902 (io-error) entry, as the CLI reports unreadable files.
//
// Exit status: 0 when the check ran (with or without findings), 2 on any other error, with
// the reason on stderr.

import { closeSync, constants, fstatSync, openSync, readSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";

const MAX_FILE_BYTES = 1 << 20;
const here = dirname(fileURLToPath(import.meta.url));
// /opt/quavon/ruff/check.mjs → /opt/quavon/node_modules: never a path from the environment.
const PACKAGE_DIR = join(here, "..", "node_modules", "@astral-sh", "ruff-wasm-nodejs");
const SETTINGS = join(here, "settings.json");

class UsageError extends Error {}

function parseArgs(argv) {
  const opts = { output: null, version: false, files: [] };
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") {
      i++;
      break;
    } else if (a === "--version") {
      opts.version = true;
    } else if (a === "--output") {
      if (i + 1 >= argv.length) throw new UsageError("--output needs a path");
      opts.output = argv[++i];
    } else if (a.startsWith("--output=")) {
      opts.output = a.slice("--output=".length);
    } else if (a.startsWith("-")) {
      throw new UsageError(`unknown option ${a}`);
    } else {
      break;
    }
  }
  opts.files = argv.slice(i);
  if (!opts.version && !opts.output) throw new UsageError("--output is required");
  return opts;
}

// readSource returns the file's text, or throws an Error whose message is the E902 text.
function readSource(name) {
  let fd;
  try {
    // O_NOFOLLOW and O_NONBLOCK: a symlink or a FIFO must not redirect or stall the scan.
    fd = openSync(name, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    throw new Error(err.code === "ELOOP" ? "Not a regular file (symbolic link)" : err.message);
  }
  try {
    if (!fstatSync(fd).isFile()) throw new Error("Not a regular file");
    const buf = Buffer.alloc(MAX_FILE_BYTES + 1);
    let n = 0;
    while (n < buf.length) {
      const r = readSync(fd, buf, n, buf.length - n, null);
      if (r === 0) break;
      n += r;
    }
    if (n > MAX_FILE_BYTES) throw new Error(`File is larger than ${MAX_FILE_BYTES} bytes`);
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(buf.subarray(0, n));
    } catch {
      throw new Error("File is not valid UTF-8");
    }
  } finally {
    closeSync(fd);
  }
}

// neutraliseSuppressions blanks suppression directives without moving any character. Every
// run from a "#" to the end of its line is treated as a possible comment; a "#" inside a
// string only makes it blank more, never less.
function neutraliseSuppressions(text) {
  const blank = (s) => " ".repeat(s.length);
  return text.replace(/#[^\r\n]*/g, (segment) =>
    segment
      .replace(/noqa/gi, blank)
      .replace(/(ruff\s*:\s*)(disable|enable)/gi, (_, prefix, verb) => prefix + blank(verb)),
  );
}

function entry(filename, code, message, start, end, url) {
  return {
    cell: null,
    code,
    end_location: { column: end.column, row: end.row },
    filename,
    fix: null,
    location: { column: start.column, row: start.row },
    message,
    noqa_row: null,
    url,
  };
}

function main(argv) {
  const opts = parseArgs(argv);
  // Baseline (Liftoff) code only, set before the module is compiled: optimising the 10 MB
  // module costs more than it saves (Node 18: 0.5 s instead of 1.4 s for one file, 1 s
  // instead of 4.7 s for 300 files of the standard library).
  setFlagsFromString("--liftoff-only");
  // Compile each function when it is first called, not the whole module up front, and
  // leave the code pages writable: Node 18 write-protects wasm code with an mprotect per
  // batch it compiles (1,216 for 17 files), each a round trip through gVisor's sentry.
  // Under runsc 17 files took 1.83-1.89 s with both instead of 2.10-2.28 s (runc:
  // 0.62-0.65 s against 0.72-0.79 s), the same report. What is given up is W^X for wasm
  // code, a hardening against a memory bug in V8's wasm engine being exploited; the files'
  // text reaches only Ruff's own (memory-safe) code, and the boundary that holds if V8
  // falls is the sandbox (gVisor, no network, no secrets: spec §3), not this process.
  setFlagsFromString("--wasm-lazy-compilation");
  setFlagsFromString("--no-wasm-write-protect-code-memory");
  const require = createRequire(import.meta.url);
  const ruff = require(PACKAGE_DIR);
  if (opts.version) {
    process.stdout.write(`${ruff.Workspace.version()}\n`);
    return;
  }
  let settings;
  try {
    settings = JSON.parse(readSource(SETTINGS));
  } catch (err) {
    throw new Error(`${SETTINGS}: ${err.message}`);
  }
  // Utf32: columns in code points, as the CLI's JSON output counts them.
  const workspace = new ruff.Workspace(settings, ruff.PositionEncoding.Utf32);
  const out = [];
  for (const name of opts.files) {
    let text;
    try {
      text = readSource(name);
    } catch (err) {
      const at = { row: 1, column: 1 };
      out.push(entry(name, "E902", err.message, at, at, "https://docs.astral.sh/ruff/rules/io-error"));
      continue;
    }
    let diagnostics;
    try {
      diagnostics = workspace.check(neutraliseSuppressions(text));
    } catch (err) {
      throw new Error(`ruff failed on ${name}: ${err && err.message ? err.message : err}`);
    }
    const found = diagnostics.map((d) => {
      const code = d.code === "invalid-syntax" ? null : d.code;
      return entry(name, code, d.message, d.start_location, d.end_location, null);
    });
    found.sort(
      (a, b) =>
        a.location.row - b.location.row ||
        a.location.column - b.location.column ||
        String(a.code).localeCompare(String(b.code)),
    );
    out.push(...found);
  }
  writeFileSync(opts.output, `${JSON.stringify(out, null, 2)}\n`, { mode: 0o644 });
}

try {
  main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`quavon ruff: ${err && err.message ? err.message : err}\n`);
  process.exitCode = 2;
}
