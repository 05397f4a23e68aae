// The layer check: every import between src/ folders must follow docs/layers.json, the layer
// picture of docs/architecture.md. An import from part A to part B is allowed when B is reachable
// from A along the picture's arrows (dependencies point one way, down); it is a break when it is
// not, and always when the picture says A must never use B. Imports inside one part are free.
// There is no list of tolerated breaks: any break fails the check (and npm test, through
// test/scripts/check-layers.test.ts). An import the picture does not allow is moved, or goes through the
// wiring in api/, or the picture (docs/layers.json and docs/architecture.md) gains the arrow.
//
//   node scripts/check-layers.mjs        prints the breaks and exits 1 if there is any
import { readFileSync, readdirSync, statSync, existsSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

/** Every .ts file under `dir`. */
function sourceFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return name.endsWith(".ts") && !name.endsWith(".d.ts") ? [p] : [];
  });
}

/** The files of `src/` that `file` imports (import, export ... from, import type, import()). */
function importsOf(file) {
  const info = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  const out = [];
  for (const ref of info.importedFiles) {
    if (!ref.fileName.startsWith(".")) continue;
    const target = resolve(dirname(file), ref.fileName).replace(/\.js$/, ".ts");
    if (existsSync(target)) out.push(target);
  }
  return out;
}

/** The parts of the picture whose folders exist, and the part of a file (the longest matching folder). */
function partsOf(root, layers) {
  const folders = [];
  for (const [name, part] of Object.entries(layers.parts)) for (const f of part.is) folders.push({ name, folder: f });
  folders.sort((a, b) => b.folder.length - a.folder.length);
  return (file) => {
    const rel = relative(root, file).split("\\").join("/");
    return folders.find((f) => rel.startsWith(f.folder))?.name ?? null;
  };
}

/** Parts reachable from each part along the arrows (all parts of the picture, built or not). */
function reachable(layers) {
  const next = new Map();
  for (const [a, b] of layers.arrows) next.set(a, [...(next.get(a) ?? []), b]);
  const out = new Map();
  for (const start of Object.keys(layers.parts)) {
    const seen = new Set();
    const stack = [...(next.get(start) ?? [])];
    while (stack.length > 0) {
      const p = stack.pop();
      if (seen.has(p)) continue;
      seen.add(p);
      stack.push(...(next.get(p) ?? []));
    }
    out.set(start, seen);
  }
  return out;
}

/**
 * Checks the imports under `root`/src against `root`/docs/layers.json. Returns the breaks, each
 * as "from/file.ts -> to/file.ts" (paths under src/) with its parts and reason.
 */
export function checkLayers(root) {
  const layers = JSON.parse(readFileSync(join(root, "docs/layers.json"), "utf8"));
  const partOf = partsOf(root, layers);
  const down = reachable(layers);
  const never = new Map(layers.never.map(([a, b, why]) => [`${a}->${b}`, why]));
  const breaks = [];
  for (const file of sourceFiles(join(root, "src"))) {
    const from = partOf(file);
    if (!from) continue;
    for (const target of importsOf(file)) {
      const to = partOf(target);
      if (!to || to === from) continue;
      const why = never.get(`${from}->${to}`) ?? (down.get(from)?.has(to) ? null : `${to} is not below ${from} in the layer picture`);
      if (why === null) continue;
      const edge = `${relative(join(root, "src"), file)} -> ${relative(join(root, "src"), target)}`.split("\\").join("/");
      breaks.push({ edge, parts: `${from} -> ${to}`, why });
    }
  }
  return { breaks };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
  const { breaks } = checkLayers(root);
  for (const b of breaks) console.log(`BREAK ${b.edge}  (${b.parts}: ${b.why})`);
  console.log(`${breaks.length} breaks`);
  process.exitCode = breaks.length > 0 ? 1 : 0;
}
