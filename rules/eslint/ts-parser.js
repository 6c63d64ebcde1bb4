// SPDX-License-Identifier: Apache-2.0
//
// @typescript-eslint/parser, loaded on first use. Requiring it loads
// typescript (9 MB of JavaScript to compile), which a scan needs only for a
// TypeScript file or a JavaScript file espree cannot parse (./parser.js);
// most scans have neither, and under gVisor the load costs about a second.
// Every call goes to the real parser, so what it parses, and how, is
// unchanged.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
let parser;
const load = () => (parser ??= require("@typescript-eslint/parser"));

export default {
  meta: { name: "quavon-lazy-typescript-eslint-parser" },
  parse: (code, options) => load().parse(code, options),
  parseForESLint: (code, options) => load().parseForESLint(code, options),
};
