/**
 * Runs a docs example the way a new user would: in a folder of its own, a project
 * (`"type": "module"`) that has Stagecraft installed as `node_modules/stagecraft` (a link to this
 * repository, so `import * as sc from "stagecraft"` resolves through package.json's "exports" to
 * the built dist/, and `npx stagecraft` to bin/), in a fresh Node process: TypeScript through tsx
 * (`node --import tsx app.ts`), JavaScript as plain ES modules, commands with bash.
 *
 * The examples of one document share one folder and run in order, as a reader following the page
 * would: a file one example writes (an exported model) is there for the next one.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { CodeBlock } from "./markdown-blocks.js";

export const REPO = fileURLToPath(new URL("../../", import.meta.url));
const TSX = import.meta.resolve("tsx");
const RECORDER = new URL("./record-console.mjs", import.meta.url).href;

export interface Print {
  /** The example's line (1-based, within the block) that called console.log. */
  line: number;
  text: string;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  prints: Print[];
  seconds: number;
}

export class Sandbox {
  readonly dir: string;
  private count = 0;

  constructor(label: string) {
    this.dir = mkdtempSync(join(tmpdir(), `stagecraft-docs-${label.replace(/[^\w.-]/g, "_")}-`));
    writeFileSync(join(this.dir, "package.json"), JSON.stringify({ name: "docs-example", private: true, type: "module" }));
    mkdirSync(join(this.dir, "node_modules", ".bin"), { recursive: true });
    symlinkSync(REPO, join(this.dir, "node_modules", "stagecraft"), "dir");
    symlinkSync(join(REPO, "bin", "stagecraft.mjs"), join(this.dir, "node_modules", ".bin", "stagecraft"));
  }

  /** Runs one example; never rejects on the example's failure (the result says it). */
  run(block: CodeBlock, timeoutMs: number): Promise<RunResult> {
    const n = ++this.count;
    const ext = block.kind === "commands" ? "sh" : block.lang === "ts" || block.lang === "typescript" ? "ts" : "js";
    const file = join(this.dir, `example-${n}.${ext}`);
    const record = join(this.dir, `example-${n}.prints.jsonl`);
    writeFileSync(file, block.code);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DOCS_EXAMPLE_FILE: file,
      DOCS_EXAMPLE_RECORD: record,
      PATH: `${join(this.dir, "node_modules", ".bin")}:${join(REPO, "node_modules", ".bin")}:${process.env.PATH ?? ""}`,
    };
    delete env.NODE_TEST_CONTEXT; // the example is a program of its own, not a test file of this run
    delete env.NODE_OPTIONS;
    const [cmd, args] =
      ext === "sh"
        ? ["bash", ["-eo", "pipefail", file]]
        : [process.execPath, [...(ext === "ts" ? ["--import", TSX] : []), "--import", RECORDER, file]];
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const child = spawn(cmd, args, { cwd: this.dir, env, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => (stdout += d));
      child.stderr.on("data", (d: Buffer) => (stderr += d));
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      child.on("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        const prints = existsSync(record)
          ? readFileSync(record, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Print)
          : [];
        resolve({ code, signal, stdout, stderr, prints, seconds: (performance.now() - started) / 1000 });
      });
    });
  }

  /**
   * Type-checks TypeScript examples as a user's strict NodeNext project would (tsc against the
   * package's .d.ts files, found through node_modules/stagecraft): one file per example, one tsc run.
   */
  typecheck(blocks: CodeBlock[]): Promise<{ code: number | null; output: string; files: Map<string, CodeBlock> }> {
    const files = new Map<string, CodeBlock>();
    const dir = join(this.dir, "typecheck");
    mkdirSync(dir);
    blocks.forEach((b, i) => {
      const name = `example-${i + 1}.ts`;
      writeFileSync(join(dir, name), b.code);
      files.set(name, b);
    });
    const compilerOptions = {
      target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true,
      skipLibCheck: true, types: ["node"], typeRoots: [join(REPO, "node_modules", "@types")],
    };
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["*.ts"] }));
    const tsc = fileURLToPath(import.meta.resolve("typescript/bin/tsc"));
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [tsc, "-p", dir, "--pretty", "false"], { cwd: this.dir, stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      child.stdout.on("data", (d: Buffer) => (output += d));
      child.stderr.on("data", (d: Buffer) => (output += d));
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, output, files }));
    });
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
