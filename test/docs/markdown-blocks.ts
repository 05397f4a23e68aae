/**
 * The fenced code blocks of a Markdown file, with the annotation that may precede each one.
 *
 * A block's kind comes from its info string: `ts`/`typescript`/`js`/`javascript`/`mjs` blocks are
 * programs and `sh`/`bash`/`shell` blocks are commands (both are examples, run by
 * examples.test.ts); a block with no info string or another language is text (a folder layout,
 * a usage synopsis, a diagram) and is only counted.
 *
 * An example that cannot run in a test says so in the Markdown, on the line right before its fence
 * (blank lines between are allowed), in an HTML comment a reader of the rendered page does not see:
 *
 *   <!-- example: no-run (why: needs a GPU, a browser, a file you supply, ...) -->
 *   <!-- example: needs-webgpu -->   runs where a WebGPU adapter opens (npm test's lavapipe), else a visible skip
 *
 * Fences follow CommonMark: ``` or ~~~ (three or more), indented at most three spaces, closed by a
 * fence of the same character at least as long.
 */
export type BlockKind = "program" | "commands" | "text";

export interface CodeBlock {
  /** The Markdown file, as given. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The info string's first word, lower case ("" when none). */
  lang: string;
  kind: BlockKind;
  code: string;
  /** The block's annotation, when there is one. */
  mark?: { kind: "no-run"; reason: string } | { kind: "needs-webgpu" };
}

const PROGRAM_LANGS = new Set(["ts", "typescript", "js", "javascript", "mjs"]);
const COMMAND_LANGS = new Set(["sh", "bash", "shell"]);
const MARK = /^\s*<!--\s*example:\s*(.*?)\s*-->\s*$/;

function parseMark(text: string, where: string): CodeBlock["mark"] {
  const noRun = /^no-run\s*\((.+)\)$/.exec(text);
  if (noRun) return { kind: "no-run", reason: noRun[1]!.trim() };
  if (text === "needs-webgpu") return { kind: "needs-webgpu" };
  throw new Error(`${where}: unknown example annotation "${text}" (known: "no-run (reason)", "needs-webgpu")`);
}

export function codeBlocks(file: string, markdown: string): CodeBlock[] {
  const lines = markdown.split(/\r?\n/);
  const blocks: CodeBlock[] = [];
  let pendingMark: { text: string; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const mark = MARK.exec(line);
    if (mark) {
      pendingMark = { text: mark[1]!, line: i + 1 };
      continue;
    }
    const open = /^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)/.exec(line);
    if (!open) {
      if (line.trim() !== "" && pendingMark) {
        throw new Error(`${file}:${pendingMark.line}: an example annotation must come right before a code block`);
      }
      continue;
    }
    const fence = open[2]!;
    const lang = open[3]!.toLowerCase();
    const body: string[] = [];
    let j = i + 1;
    const closes = new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`);
    while (j < lines.length && !closes.test(lines[j]!)) body.push(lines[j++]!);
    if (j === lines.length) throw new Error(`${file}:${i + 1}: code block never closed`);
    const kind: BlockKind = PROGRAM_LANGS.has(lang) ? "program" : COMMAND_LANGS.has(lang) ? "commands" : "text";
    const block: CodeBlock = { file, line: i + 1, lang, kind, code: body.join("\n") + "\n" };
    if (pendingMark) {
      if (kind === "text") throw new Error(`${file}:${pendingMark.line}: an example annotation on a text block (no language)`);
      block.mark = parseMark(pendingMark.text, `${file}:${pendingMark.line}`);
      pendingMark = undefined;
    }
    blocks.push(block);
    i = j;
  }
  if (pendingMark) throw new Error(`${file}:${pendingMark.line}: an example annotation with no code block after it`);
  return blocks;
}
