import pkg from "./package.json" with { type: "json" };
export default pkg;
