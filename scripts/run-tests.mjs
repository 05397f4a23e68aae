// Runs every test/**/*.test.ts with Node's built-in runner (TypeScript through tsx).
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return find(p);
    return name.endsWith(".test.ts") ? [p] : [];
  });
}
const only = process.argv.slice(2);
const files = only.length > 0 ? only : find("test").sort();
const r = spawnSync(process.execPath, ["--import", "tsx", "--test", "--test-reporter=spec", ...files], { stdio: "inherit" });
process.exit(r.status ?? 1);
