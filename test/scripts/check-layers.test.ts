// The layer check (scripts/check-layers.mjs): imports between src/ folders follow docs/layers.json,
// the layer picture of docs/architecture.md, with no break at all.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, cpSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
// @ts-expect-error: a plain JavaScript module of the project's scripts
import { checkLayers } from "../../scripts/check-layers.mjs";

interface Break {
  edge: string;
  parts: string;
  why: string;
}
type Result = { breaks: Break[] };

const root = fileURLToPath(new URL("../..", import.meta.url));

test("imports between src/ folders follow the layer picture, with no break", () => {
  const r = checkLayers(root) as Result;
  assert.deepEqual(
    r.breaks.map((b) => `${b.edge} (${b.parts}: ${b.why})`),
    [],
    "a new import breaks the layer order (docs/architecture.md shows where things go)",
  );
});

test("the layer check finds an import that runs up, one the picture forbids, and a type-only one", () => {
  // a copy of the picture with a tiny tree: core -> ops (never), ops -> graph (not below), type-only too
  const dir = mkdtempSync(join(tmpdir(), "layers-"));
  mkdirSync(join(dir, "docs"));
  cpSync(join(root, "docs/layers.json"), join(dir, "docs/layers.json"));
  for (const d of ["core", "ops", "graph", "backends"]) mkdirSync(join(dir, "src", d), { recursive: true });
  writeFileSync(join(dir, "src/core/a.ts"), `import type { B } from "../ops/b.js";\nexport type A = B;\n`);
  writeFileSync(join(dir, "src/ops/b.ts"), `import { g } from "../graph/g.js";\nexport type B = number;\nexport const b = g;\n`);
  writeFileSync(join(dir, "src/graph/g.ts"), `import { k } from "../backends/k.js";\nexport const g = k;\n`);
  writeFileSync(join(dir, "src/backends/k.ts"), `export const k = 1;\n`);
  const r = checkLayers(dir) as Result;
  const found = Object.fromEntries(r.breaks.map((b) => [b.edge, b.why]));
  assert.match(found["core/a.ts -> ops/b.ts"] ?? "", /the core knows no op/);
  assert.match(found["ops/b.ts -> graph/g.ts"] ?? "", /Graph is not below Ops/);
  assert.match(found["graph/g.ts -> backends/k.ts"] ?? "", /passes know no backend/);
  assert.equal(r.breaks.length, 3);
  assert.ok(readFileSync(join(dir, "docs/layers.json"), "utf8").length > 0);
});
