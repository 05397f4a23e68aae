/**
 * Large tensors come from glibc's heap, not fresh mappings (platform/node.ts keepLargeHostBlocks):
 * a 64 MB tensor's block is counted in mallinfo2's mapped bytes (hblkhd) when malloc is left at its
 * defaults (STAGECRAFT_HOST_MALLOC=system) and not once the library has tuned it. Each case runs in
 * a child process, since the setting is process-wide.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
function hasKoffiAndGlibc(): boolean {
  if (process.platform !== "linux") return false;
  try {
    require("koffi");
  } catch {
    return false;
  }
  return !!(process.report?.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime;
}

const CHILD = `
import koffi from "koffi";
import * as sc from "./src/api/index.ts";
const MallInfo2 = koffi.struct("mallinfo2_t", { arena: "size_t", ordblks: "size_t", smblks: "size_t", hblks: "size_t", hblkhd: "size_t", usmblks: "size_t", fsmblks: "size_t", uordblks: "size_t", fordblks: "size_t", keepcost: "size_t" });
const mallinfo2 = koffi.load("libc.so.6").func("mallinfo2_t mallinfo2()");
const before = Number(mallinfo2().hblkhd);
const t = sc.zeros([16 * 1024 * 1024], "float32");
const after = Number(mallinfo2().hblkhd);
console.log(JSON.stringify({ mappedGrowth: after - before, size: t.size }));
`;

function mappedGrowth(mode: string): number {
  const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", CHILD], {
    env: { ...process.env, STAGECRAFT_HOST_MALLOC: mode },
    encoding: "utf8",
  });
  const r = JSON.parse(out.trim().split("\n").pop()!) as { mappedGrowth: number; size: number };
  assert.equal(r.size, 16 * 1024 * 1024);
  return r.mappedGrowth;
}

test("a 64 MB tensor is served from the heap once malloc is tuned, from a fresh mapping when left alone", { skip: hasKoffiAndGlibc() ? false : "needs Linux with glibc and koffi" }, () => {
  const untouched = mappedGrowth("system");
  assert.ok(untouched >= 64 * 1024 * 1024, `with malloc at its defaults the block is mapped: ${untouched} bytes`);
  const tuned = mappedGrowth("default");
  assert.ok(tuned < 1024 * 1024, `tuned: no new mapping for the block, got ${tuned} bytes`);
});
