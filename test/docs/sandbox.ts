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
import { mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { CodeBlock } from "./markdown-blocks.js";
import { appFolder, REPO } from "../util/app-folder.js";
import { spawnCollect } from "../util/fresh-process.js";

export { REPO };
const TSX = import.meta.resolve("tsx");
const RECORDER = new URL("./record-console.mjs", import.meta.url).href;

/**
 * The PATH an example's commands get: the sandbox project's node_modules/.bin first (as npm
 * scripts and npx would have it), then this process's PATH without any node_modules/.bin folder
 * (`npm test` puts the repository's there): tools the repository has installed for itself (tsx,
 * esbuild, tsc) are not a new user's, so an example that needs one must install it.
 */
export function examplePath(sandboxDir: string, path = process.env.PATH ?? ""): string {
  const inherited = path.split(delimiter).filter((p) => p !== "" && !/(^|[\\/])node_modules[\\/]\.bin[\\/]?$/.test(p));
  return [join(sandboxDir, "node_modules", ".bin"), ...inherited].join(delimiter);
}

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
    this.dir = appFolder(`docs-${label}`);
  }

  /** Runs one example; never rejects on the example's failure (the result says it). */
  async run(block: CodeBlock, timeoutMs: number): Promise<RunResult> {
    const n = ++this.count;
    const ext = block.kind === "commands" ? "sh" : block.lang === "ts" || block.lang === "typescript" ? "ts" : "js";
    const file = join(this.dir, `example-${n}.${ext}`);
    const record = join(this.dir, `example-${n}.prints.jsonl`);
    writeFileSync(file, block.code);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DOCS_EXAMPLE_FILE: file,
      DOCS_EXAMPLE_RECORD: record,
      PATH: examplePath(this.dir),
    };
    delete env.NODE_TEST_CONTEXT; // the example is a program of its own, not a test file of this run
    delete env.NODE_OPTIONS;
    const [cmd, args] =
      ext === "sh"
        ? ["bash", ["-eo", "pipefail", file]]
        : [process.execPath, [...(ext === "ts" ? ["--import", TSX] : []), "--import", RECORDER, file]];
    const started = performance.now();
    const { code, signal, stdout, stderr } = await spawnCollect(cmd, args, { cwd: this.dir, env, timeoutMs });
    const prints = existsSync(record)
      ? readFileSync(record, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Print)
      : [];
    return { code, signal, stdout, stderr, prints, seconds: (performance.now() - started) / 1000 };
  }

  /**
   * Type-checks TypeScript examples as a user's strict NodeNext project would (tsc against the
   * package's .d.ts files, found through node_modules/stagecraft): one file per example, one tsc run.
   */
  async typecheck(blocks: CodeBlock[]): Promise<{ code: number | null; output: string; files: Map<string, CodeBlock> }> {
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
    const { code, stdout, stderr } = await spawnCollect(process.execPath, [tsc, "-p", dir, "--pretty", "false"], { cwd: this.dir });
    return { code, output: stdout + stderr, files };
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
