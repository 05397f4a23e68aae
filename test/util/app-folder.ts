/**
 * A new user's project for tests that use the built package as an application would: a temporary
 * folder with a package.json (`"type": "module"`) and Stagecraft installed as npm would place it,
 * `node_modules/stagecraft` (a link to this repository, so `import ... from "stagecraft"` resolves
 * through package.json's "exports" to dist/) and `node_modules/.bin/stagecraft` (the command).
 * The caller deletes the folder (rmSync(dir, { recursive: true, force: true })).
 */
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** This repository's root folder (with a trailing separator). */
export const REPO = fileURLToPath(new URL("../../", import.meta.url));

/**
 * Makes the folder, named `stagecraft-<prefix>-XXXXXX` in the system's temporary folder, with
 * `files` (name -> text) written in it; returns its path.
 */
export function appFolder(prefix: string, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), `stagecraft-${prefix.replace(/[^\w.-]/g, "_")}-`));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "stagecraft-test-app", private: true, type: "module" }));
  mkdirSync(join(dir, "node_modules", ".bin"), { recursive: true });
  symlinkSync(REPO, join(dir, "node_modules", "stagecraft"), "dir");
  symlinkSync(join(REPO, "bin", "stagecraft.mjs"), join(dir, "node_modules", ".bin", "stagecraft"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}
