/**
 * Parses the text of `Error.prototype.stack` into frames, for engines without V8's structured
 * stack API in use (browsers: the browser platform reads user locations this way). Handles the
 * formats of V8 (Chromium, Edge, Node), SpiderMonkey (Firefox) and JavaScriptCore (Safari).
 */

export interface StackFrame {
  /** The script's URL or path as the engine shows it; "" for code without one (eval'd, native). */
  file: string;
  /** 1-based line and column in that script. */
  line: number;
  column: number;
  /** The function's name as shown, or "" when anonymous. */
  functionName: string;
}

// V8: "    at name (file:1:2)", "    at file:1:2", "    at async name (file:1:2)", "    at new Name (file:1:2)",
// "    at eval (eval at f (file:1:2), <anonymous>:3:4)"
const V8_LOCATION = /^(.*):(\d+):(\d+)$/;
// SpiderMonkey / JavaScriptCore: "name@file:1:2", "@file:1:2", "name@file line 5 > Function:1:2"
const GECKO_FRAME = /^\s*(.*?)@(.*?):(\d+):(\d+)\s*$/;
// JavaScriptCore, a frame without a name: "http://host/file.js:1:2"
const BARE_FRAME = /^()([a-z][\w+.-]*:\/\/.*?):(\d+):(\d+)\s*$/;

/** One line of a stack, or null for a line that is not a frame (the message, "    at native code"). */
export function parseStackLine(text: string): StackFrame | null {
  if (/^\s*at /.test(text)) {
    if (/\(eval at /.test(text)) {
      // code made by eval / new Function: the position is in the generated code, which has no file
      const m = /,\s*(.*?):(\d+):(\d+)\)\s*$/.exec(text);
      const name = /^\s*at (?:async )?(.*?) \(eval at /.exec(text)?.[1] ?? "";
      return m ? { file: m[1] === "<anonymous>" ? "" : m[1]!, line: Number(m[2]), column: Number(m[3]), functionName: name } : null;
    }
    const body = text.replace(/^\s*at /, "").trim();
    const paren = body.endsWith(")") ? body.indexOf(" (") : -1;
    const location = paren >= 0 ? body.slice(paren + 2, -1) : body;
    const m = V8_LOCATION.exec(location);
    if (!m) return null;
    const name = (paren >= 0 ? body.slice(0, paren) : "").replace(/^async /, "").replace(/^new /, "");
    const file = m[1] === "<anonymous>" || m[1] === "native" ? "" : m[1]!;
    return { file, line: Number(m[2]), column: Number(m[3]), functionName: name };
  }
  const g = GECKO_FRAME.exec(text) ?? BARE_FRAME.exec(text);
  if (!g) return null;
  let file = g[2]!;
  // Firefox: "url line 12 > eval", "url line 12 > Function": the position is in generated code
  if (/ line \d+ > (?:eval|Function)/.test(file)) file = "";
  // (Firefox marks the first frame after an await "async*"; JavaScriptCore names top-level code)
  const name = g[1]!.replace(/^async\*/, "").replace(/^(?:global code|module code|eval code)$/, "");
  return { file, line: Number(g[3]), column: Number(g[4]), functionName: name };
}

/** Every frame of a stack, innermost first (lines that are not frames are skipped). */
export function parseStack(stack: string | undefined): StackFrame[] {
  if (!stack) return [];
  const out: StackFrame[] = [];
  for (const line of stack.split("\n")) {
    const f = parseStackLine(line);
    if (f) out.push(f);
  }
  return out;
}
