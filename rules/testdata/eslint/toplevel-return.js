if (require.main !== module) return;
console.log("cli");
