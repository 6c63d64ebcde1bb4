// SPDX-License-Identifier: Apache-2.0
//
// The parser Quavon's ESLint config uses for JavaScript files (.js, .jsx,
// .mjs, .cjs). Code in the wild is written in several dialects that no single
// parser setting accepts: ES modules, CommonJS scripts in sloppy mode
// (`with`, legacy octal literals, `package` or `await` as names, a
// top-level `return`, `<!--` comments), JSX in .js files, decorators. A file
// ESLint cannot parse gets no findings at all, so this parser tries, in order:
//
//   1. espree as an ES module (what ESLint itself does for these files),
//   2. espree as a CommonJS script (sloppy mode, top-level return),
//   3. @typescript-eslint/parser, whose JavaScript mode also accepts
//      decorators and type annotations,
//
// with JSX enabled in each (.cjs files start with step 2, .mjs files skip
// it). The first that succeeds is used; a file that parses as a module
// gives exactly the tree and scopes ESLint would have built. When all three
// fail, the error reported is the one found furthest into the file (the
// likeliest real mistake), and the message names the three attempts, so the
// file shows up as not scanned instead of silently scanned by nothing.
//
// espree, eslint-scope and eslint-visitor-keys are the copies ESLint uses
// itself: the image has one of each, beside ESLint (deploy/images/build
// fails when ESLint gets its own nested version). Static imports, so that
// the bundle of ./lint.mjs holds them.
import path from "node:path";
import * as espree from "espree";
import * as eslintScope from "eslint-scope";
import * as visitorKeys from "eslint-visitor-keys";
import tsParser from "./ts-parser.js";

// Parse attempts by file extension.
const ATTEMPTS = {
  ".cjs": ["commonjs", "module", "typescript"],
  ".mjs": ["module", "typescript"],
};
const DEFAULT_ATTEMPTS = ["module", "commonjs", "typescript"];

const DESCRIPTIONS = {
  module: "as an ES module",
  commonjs: "as a CommonJS script",
  typescript: "with the TypeScript parser",
};

function withJSX(options) {
  return { ...options, ecmaFeatures: { ...options.ecmaFeatures, jsx: true } };
}

// parseWithEspree parses code as sourceType ("module" or "commonjs") and
// analyses its scopes the way ESLint does for espree.
function parseWithEspree(code, options, sourceType) {
  const parserOptions = withJSX({ ...options, sourceType });
  const ast = espree.parse(code, parserOptions);
  const scopeManager = eslintScope.analyze(ast, {
    ignoreEval: true,
    nodejsScope: sourceType === "commonjs",
    impliedStrict: false,
    ecmaVersion: typeof options.ecmaVersion === "number" ? options.ecmaVersion : 6,
    sourceType,
    childVisitorKeys: visitorKeys.KEYS,
    fallback: visitorKeys.getKeys,
  });
  return { ast, scopeManager, visitorKeys: visitorKeys.KEYS, services: {} };
}

function parseWith(attempt, code, options) {
  if (attempt === "typescript") {
    return tsParser.parseForESLint(code, withJSX({ ...options, sourceType: "module" }));
  }
  return parseWithEspree(code, options, attempt);
}

// further reports whether error a was found later in the file than b.
function further(a, b) {
  const line = (e) => (typeof e.lineNumber === "number" ? e.lineNumber : 0);
  const column = (e) => (typeof e.column === "number" ? e.column : 0);
  return line(a) > line(b) || (line(a) === line(b) && column(a) > column(b));
}

export function parseForESLint(code, options = {}) {
  const ext = path.extname(options.filePath || "").toLowerCase();
  const attempts = ATTEMPTS[ext] || DEFAULT_ATTEMPTS;
  let best = null;
  for (const attempt of attempts) {
    try {
      return parseWith(attempt, code, options);
    } catch (err) {
      if (!(err instanceof Error)) {
        throw err;
      }
      if (best === null || further(err, best)) {
        best = err;
      }
    }
  }
  const tried = attempts.map((a) => DESCRIPTIONS[a]).join(", ");
  const error = new SyntaxError(`${best.message} (parsed ${tried}; none succeeded)`);
  error.lineNumber = best.lineNumber;
  error.column = best.column;
  error.index = best.index;
  throw error;
}

export const meta = { name: "quavon-javascript-parser", version: "1.0.0" };

export default { meta, parseForESLint };
