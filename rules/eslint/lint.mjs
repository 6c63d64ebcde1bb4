// SPDX-License-Identifier: Apache-2.0
//
// Quavon's ESLint program: what
//
//   eslint --no-config-lookup --no-inline-config \
//     -c /opt/quavon/eslint/security.config.js -f json -o OUT -- FILES...
//
// does, through ESLint's own Node.js API, with security.config.js imported
// here instead of by path. The driver runs it as
//
//   node [--jitless] /opt/quavon/eslint/lint.bundle.mjs -o OUT -- FILES...
//
// where lint.bundle.mjs is this file and everything it imports (ESLint,
// eslint-plugin-security, the config and its parsers) in one file, made by
// deploy/images/build with esbuild. Under gVisor, starting ESLint the usual
// way resolves and reads some 400 modules (2,000 stat calls, each a trip to
// gVisor's kernel); the bundle is one read. TypeScript (./ts-parser.js)
// stays out of it: it is loaded from /opt/quavon/node_modules on first use.
//
// What the command line does and this does too: the config file's array is
// the whole configuration (ESLint's defaults, then the array; base path the
// working directory), inline configuration is off, a file ESLint ignores
// comes back as a warning without a rule (warnIgnored), a name that matches
// no file is an error, the report is ESLint's `json` formatter
// (JSON.stringify of the results), and the exit status is 0, 1 when any
// error-severity message (a parse error included) was reported, 2 when ESLint
// failed (the message on stderr). rules/eslint_test.go checks the reports and
// exit statuses against the command line's in the scanners image.
import { writeFileSync } from "node:fs";
import { ESLint } from "eslint";
import config from "./security.config.js";

const USAGE = "usage: lint.mjs -o OUT -- FILE...";

function parseArgs(argv) {
  if (argv.length < 4 || argv[0] !== "-o" || argv[2] !== "--") {
    throw new Error(USAGE);
  }
  return { out: argv[1], files: argv.slice(3) };
}

async function main() {
  const { out, files } = parseArgs(process.argv.slice(2));
  const eslint = new ESLint({
    overrideConfigFile: true,
    overrideConfig: config,
    allowInlineConfig: false,
    warnIgnored: true,
    errorOnUnmatchedPattern: true,
  });
  const results = await eslint.lintFiles(files);
  writeFileSync(out, JSON.stringify(results));
  return results.some((r) => r.errorCount > 0) ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(`eslint: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 2;
  },
);
