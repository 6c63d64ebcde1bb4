// SPDX-License-Identifier: Apache-2.0
//
// Quavon's ESLint 9 flat config for security findings. The driver runs
//
//   eslint --no-config-lookup --no-inline-config \
//     -c /opt/quavon/eslint/security.config.js -f json -o OUT FILES...
//
// so no eslint.config.* from the scanned repository is loaded or executed,
// and `eslint-disable` comments in the scanned code are ignored (also set
// here with noInlineConfig, in case the flag is ever dropped). Packages are
// resolved from /opt/quavon/node_modules: eslint, eslint-plugin-security,
// @typescript-eslint/parser and typescript. JavaScript files go through
// ./parser.js, which accepts ES modules, sloppy-mode CommonJS scripts, JSX
// and decorators (see there); TypeScript files through @typescript-eslint
// (./ts-parser.js: loaded on first use).
import security from "eslint-plugin-security";
import tsParser from "./ts-parser.js";
import javascriptParser from "./parser.js";

// Core ESLint rules that catch code injection and similar risks.
const coreSecurityRules = {
  "no-eval": "error",
  "no-implied-eval": "error",
  "no-new-func": "error",
  "no-script-url": "error",
  "no-proto": "warn",
  "no-caller": "warn",
};

const linterOptions = {
  noInlineConfig: true,
  reportUnusedDisableDirectives: "off",
};

const parserOptions = {
  ecmaFeatures: { jsx: true },
};

// no-implied-eval only recognises setTimeout & co. when they are known
// globals; declare the browser and Node.js ones it looks for.
const globals = {
  setTimeout: "readonly",
  setInterval: "readonly",
  setImmediate: "readonly",
  execScript: "readonly",
  window: "readonly",
  self: "readonly",
  global: "readonly",
};

export default [
  {
    // Only dependencies are skipped (ESLint skips them by default too);
    // nothing else in the repository can opt out of the scan.
    ignores: ["**/node_modules/"],
  },
  {
    name: "quavon/javascript",
    files: ["**/*.{js,mjs,cjs,jsx}"],
    linterOptions,
    languageOptions: {
      ecmaVersion: "latest",
      sourceType: "module",
      globals,
      // Module, then CommonJS script, then the TypeScript parser's JavaScript
      // mode, by file extension (.cjs tries CommonJS first).
      parser: javascriptParser,
      parserOptions,
    },
    plugins: { security },
    rules: { ...security.configs.recommended.rules, ...coreSecurityRules },
  },
  {
    name: "quavon/typescript",
    files: ["**/*.{ts,tsx,mts,cts}"],
    linterOptions,
    languageOptions: {
      ecmaVersion: "latest",
      sourceType: "module",
      globals,
      parser: tsParser,
      // No `project`: parsing only, so the scan needs no tsconfig and never
      // runs the repository's TypeScript configuration.
      parserOptions,
    },
    plugins: { security },
    rules: { ...security.configs.recommended.rules, ...coreSecurityRules },
  },
];
