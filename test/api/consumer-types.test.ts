/**
 * A strict TypeScript consumer (strict, no skipLibCheck, NodeNext) type-checks a file importing
 * every public entry of the built package: the emitted declarations must not need a
 * devDependency (@webgpu/types, @types/cli-progress). Needs dist/ (`npm test` builds it first),
 * as test/api/package.test.ts does.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, readFileSync, symlinkSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import ts from "typescript";

const root = path.resolve(import.meta.dirname, "../..");

/** README's "Under TypeScript's type checker" example, exactly as the README has it. */
function readmeTypeScriptBlock(): string {
  const readme = readFileSync(path.join(root, "README.md"), "utf8");
  const section = readme.indexOf("### Under TypeScript's type checker");
  assert.ok(section >= 0, "README has the TypeScript section");
  const m = /```ts\n([\s\S]*?)```/.exec(readme.slice(section));
  assert.ok(m, "the section has a ts block");
  return m[1]!;
}

test("a strict TypeScript consumer type-checks the package's declarations without devDependencies", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "sc-consumer-"));
  try {
    mkdirSync(path.join(dir, "node_modules", "@types"), { recursive: true });
    symlinkSync(root, path.join(dir, "node_modules", "stagecraft"), "dir");
    symlinkSync(path.join(root, "node_modules", "@types", "node"), path.join(dir, "node_modules", "@types", "node"), "dir");
    const main = path.join(dir, "main.ts");
    writeFileSync(
      main,
      [
        `import * as sc from "stagecraft";`,
        `import * as internals from "stagecraft/internals";`,
        `import * as runtime from "stagecraft/autograph-runtime";`,
        `import * as register from "stagecraft/register";`,
        `import * as babel from "stagecraft/babel";`,
        `import * as esbuild from "stagecraft/esbuild";`,
        `import * as vite from "stagecraft/vite";`,
        `console.log(internals, runtime, register, babel, esbuild, vite);`,
      ].join("\n"),
    );
    const readmeExample = path.join(dir, "readme-example.ts");
    writeFileSync(readmeExample, readmeTypeScriptBlock());
    const program = ts.createProgram([main, readmeExample], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      // (no DOM: onnxruntime-node's own declarations, which need it, stay out of ours)
      lib: ["lib.es2022.d.ts"],
      types: ["node"],
    });
    const diags = ts.getPreEmitDiagnostics(program);
    const text = ts.formatDiagnostics(diags, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => dir, getNewLine: () => "\n" });
    assert.equal(diags.length, 0, text);
    // Symlinked, the package sees its own devDependencies: none of them may be part of the consumer's program.
    const dev = ["@webgpu/types", "@types/cli-progress"];
    const leaked = program.getSourceFiles().map((f) => f.fileName).filter((f) => dev.some((d) => f.includes(`/node_modules/${d}/`)));
    assert.deepEqual(leaked, [], "declarations reach a devDependency's types");
    // Nor may an optional dependency's: a consumer that skipped optional dependencies has none of them.
    const optional = ["onnxruntime-node", "onnxruntime-common"];
    const optionalLeaked = program.getSourceFiles().map((f) => f.fileName).filter((f) => optional.some((d) => f.includes(`/node_modules/${d}/`)));
    assert.deepEqual(optionalLeaked, [], "declarations reach an optional dependency's types");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
