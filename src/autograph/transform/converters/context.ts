/**
 * What a converter sees: the recursive traversal of its own pass (`expr`, `stmts`: they convert
 * what this pass converts and leave the rest to the other passes), builders for `ag.*` calls
 * and `loc` strings, the state (modified live variables) of each construct, fresh names and
 * temporaries.
 */
import type * as t from "@babel/types";
import type { NameGen } from "../names.js";
import type { StateInfo } from "../analyses/state.js";

export type { StateInfo } from "../analyses/state.js";

/** Construct kinds a conversion rewrote (for "this body needs conversion" diagnostics). */
export type Feature = "if" | "ternary" | "loop" | "logical" | "operator" | "index" | "call" | "print" | "assert" | "math";

export interface ConvertContext {
  readonly agName: string;
  readonly names: NameGen;
  /** Parameter name of setState functions (unused elsewhere in the function). */
  readonly stateParam: string;
  /** Converts an expression (this pass's constructs in it); `valueUsed: false` for expression statements. */
  expr(e: t.Expression, valueUsed?: boolean): t.Expression;
  /** Converts a statement list (in place; the list is returned). */
  stmts(list: t.Statement[]): t.Statement[];
  /** `ag.name(...args)` (name may be dotted: "math.exp"), positioned at `at`. */
  agCall(name: string, args: t.Expression[], at?: t.Node | null): t.CallExpression;
  /** The `"file:line:column"` string literal of a node's original position. */
  loc(node: t.Node): t.StringLiteral;
  /** State of a converted construct (from the analyses). */
  state(node: t.Node): StateInfo;
  /** A function-level temporary (declared with `let` at the top of the converted function). */
  temp(base?: string): string;
  /** Whether temporaries may be used here (not in parameter defaults). */
  readonly tempsAllowed: boolean;
  /** Whether the function is strict-mode code (sloppy code ignores failed element writes). */
  readonly strict: boolean;
  /** Whether a global name (`console`, `Math`, `undefined`) is bound locally or in an enclosing scope. */
  isShadowed(name: string, at: t.Identifier): boolean;
  /** Whether an identifier is a local let/var/param binding (so `x = ag.setItem(x, ...)` may rebind it). */
  isAssignableLocal(id: t.Identifier): boolean;
  /** Whether reads of an identifier need a TDZ check (its declaration was moved up by the lowering). */
  tdzChecked(id: t.Identifier): boolean;
  /** Whether constructs get a native copy for JS-valued conditions (false inside the closures of a staged copy). */
  readonly nativeCopies: boolean;
  /** Converts with nativeCopies false (the closures passed to ag.ifStmt / ag.ifExp). */
  closureForm<T>(fn: () => T): T;
  /** Whether an identifier (or the root of a member chain) is the `ag` runtime object. */
  isAg(e: t.Node): boolean;
  feature(f: Feature): void;
}
