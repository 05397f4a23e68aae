/**
 * Which free variables of a function can be read once, by value, when the function is converted
 * at run time: the bindings that never change after they are initialized (imports, `const`,
 * and `let`/`var`/function/class declarations never reassigned anywhere). Found by parsing the
 * module the function is defined in (the running code's text, where the inspector places the
 * function) and asking Babel's scope analysis for the binding each name has at the function.
 * A converted twin gets the values of those bindings; names bound to variables that may change
 * stay "free variables conversion cannot see" (the loader converts those in place).
 */
import type { NodePath } from "@babel/traverse";
import type * as t from "@babel/types";
import { babelParser, babelTraverse } from "./babel.js";

interface ParsedScript {
  /** Function paths by the position where their text starts ("line:column", 1-based line, 0-based column). */
  functions: Map<string, NodePath<t.Function>>;
}

const cache = new Map<string, ParsedScript | null>();
const MAX_CACHED = 64;

function parseScript(source: string): ParsedScript | null {
  if (cache.has(source)) return cache.get(source)!;
  let parsed: ParsedScript | null = null;
  try {
    const ast = babelParser().parse(source, { sourceType: "unambiguous", errorRecovery: true, plugins: ["importAttributes"] });
    const functions = new Map<string, NodePath<t.Function>>();
    babelTraverse()(ast, {
      Function(path: NodePath<t.Function>) {
        const n = path.node;
        // Methods' text (Function.prototype.toString) starts at the key; `static`/`async` come before it.
        const start = n.type === "ClassMethod" || n.type === "ObjectMethod" || n.type === "ClassPrivateMethod" ? (n.key.loc?.start ?? n.loc?.start) : n.loc?.start;
        if (start) functions.set(`${start.line}:${start.column}`, path);
        if (n.loc) functions.set(`${n.loc.start.line}:${n.loc.start.column}`, path);
      },
    });
    parsed = { functions };
  } catch {
    parsed = null;
  }
  if (cache.size >= MAX_CACHED) cache.clear();
  cache.set(source, parsed);
  return parsed;
}

export interface ConstantBinding {
  name: string;
  /** Babel's binding kind: "module" (import), "const", "let", "var", "hoisted" (function), "local" (class or function expression name)... */
  kind: string;
}

/**
 * Of `names` (free in the function whose text starts at line/column of `source`), those bound
 * to a binding that is never reassigned; an empty list when the function cannot be found.
 */
export function constantBindings(source: string, line: number, column: number, names: readonly string[]): ConstantBinding[] {
  const script = parseScript(source);
  const path = script?.functions.get(`${line}:${column}`);
  if (!path) return [];
  const out: ConstantBinding[] = [];
  for (const name of names) {
    const b = path.scope.getBinding(name);
    if (b && b.constant) out.push({ name, kind: b.kind });
  }
  return out;
}
