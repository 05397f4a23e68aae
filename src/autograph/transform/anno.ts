/**
 * Annotations: what one pass of the pipeline tells a later one about a node (as pyct's `anno`
 * does for TensorFlow's AutoGraph). The lowering passes mark the flags they generate and the
 * code they leave native; the state analysis gives each `if` and loop its state; converters
 * mark the code they generate that later converters must leave as it is.
 *
 * Annotations live beside the nodes (a WeakMap), so printing and Babel's own cloning never see
 * them; `copyTree` copies a subtree together with its annotations.
 */
import * as t from "./build.js";

/**
 * The state of an `if` or a loop (analyses/state.ts computes it; the converters read it): the
 * variables it carries. Declared here, beside the key it is annotated under, so the annotations
 * import no pass.
 */
export interface StateInfo {
  names: string[];
  /** Per name: whether setState may assign it (let/var/param bindings). */
  assignable: boolean[];
}

/** A typed annotation key. */
export interface Key<T> {
  readonly name: string;
  /** (type only) */
  readonly _type?: T;
}

function key<T>(name: string): Key<T> {
  return { name };
}

/**
 * The annotations of the pipeline, by the pass that sets them.
 */
export const Anno = {
  // -- pipeline start
  /** A node no converter enters: functions and classes of the input (each has its own twin), and its calls on `ag` (twin registrations). */
  OPAQUE: key<true>("opaque"),
  // -- lowering
  /** A declaring identifier of a `let`/`const`/`class` binding moved up (its reads are TDZ-checked). */
  TDZ_HOISTED: key<true>("tdzHoisted"),
  /** A `let x;` the lowering moved up: moved again, it moves whole (see moved-declarations.ts). */
  MOVED_DECLARATION: key<true>("movedDeclaration"),
  /** A jump re-issued natively from its flag (`if ($brk) break L;`): not a converted `if`. */
  NATIVE_JUMP: key<true>("nativeJump"),
  /** A guard a lowering put around the statements after a jump (`if (!$brk) { ... }`): the flags in its test. */
  GUARD: key<string[]>("guard"),
  /** A converted `while` loop's test: the exit flags before the loop's own test (`!$brk && t`). */
  LOOP_EXIT: key<{ flags: string[]; test: t.Expression | null }>("loopExit"),
  /**
   * A statement the break/continue pass added around a loop body: the update of a `for` (or its
   * guard), or a copy of a loop-head binding. A guard a later pass puts after a jump stops before
   * them: the update gets its own guard, the copies none (they run after a `continue` too).
   */
  LOOP_PLUMBING: key<"update" | "copy">("loopPlumbing"),
  /**
   * A block the break/continue pass wrapped around a loop (for its loop-head declarations): one
   * statement with the loop, whose flags are handled after it, not inside.
   */
  LOOP_BLOCK: key<true>("loopBlock"),
  /** The first iteration of a loop, run as a block before it (do-while): its flags go into the loop's test. */
  FIRST_ITERATION: key<true>("firstIteration"),
  /** The statement a lowering pass lowered into this one (a later pass positions what it generates for it there). */
  LOWERED_FROM: key<t.Statement>("loweredFrom"),
  /** A `for...of` loop's exit flags (its extra test `() => !$brk`). */
  FOR_OF_EXIT: key<string[]>("forOfExit"),
  /** A `try` statement whose finally block completes by a lowered jump: the variable set when it does. */
  TRY_ABRUPT: key<string>("tryAbrupt"),
  /**
   * The last statement of what a lowered jump does when it leaves a finally block (`$fab = true`
   * and the clearing of the try block's pending flags): it leaves the finally block of the try
   * statement whose abrupt variable is named here.
   */
  FINALLY_LEAVE: key<string>("finallyLeave"),
  // -- analyses
  /** The state of an `if` or a loop: modified variables defined outside it and live after it. */
  STATE: key<StateInfo>("state"),
  // -- converters
  /** Generated code with JavaScript's own semantics: no converter rewrites this node (its children are still visited). */
  NATIVE: key<true>("native"),
  /** A closure given to `ag.ifStmt` / `ag.ifExp` as a branch: constructs inside get no native copy. */
  STAGED_BRANCH: key<true>("stagedBranch"),
} as const;

/** A node's annotations, by key name. */
export type Annotations = Readonly<Record<string, unknown>>;

const store = new WeakMap<t.Node, Record<string, unknown>>();

/** All annotations of a node (one lookup, for code that asks several). */
export function annotations(node: t.Node): Annotations | undefined {
  return store.get(node);
}

export function getAnno<T>(node: t.Node, k: Key<T>): T | undefined {
  return store.get(node)?.[k.name] as T | undefined;
}

export function hasAnno(node: t.Node, k: Key<unknown>): boolean {
  const a = store.get(node);
  return a !== undefined && a[k.name] !== undefined;
}

export function setAnno<T>(node: t.Node, k: Key<T>, value: T): void {
  let a = store.get(node);
  if (!a) store.set(node, (a = {}));
  a[k.name] = value;
}

/** Sets a marker annotation and gives the node back (for building code inline). */
export function mark<N extends t.Node>(node: N, k: Key<true>): N {
  setAnno(node, k, true);
  return node;
}

/** `mark(node, Anno.NATIVE)`. */
export function native<N extends t.Node>(node: N): N {
  return mark(node, Anno.NATIVE);
}

function copyAnnotations(from: t.Node, to: t.Node): void {
  const a = store.get(from);
  if (a) store.set(to, { ...a });
}

/**
 * A deep copy of a subtree with its annotations. `shareLeaves`: identifiers and opaque nodes
 * are shared, not copied (after the analyses: the scope analysis knows identifiers by identity,
 * and no converter changes an identifier or an opaque node in place).
 */
export function copyTree<N extends t.Node>(node: N, shareLeaves: boolean): N {
  const copy = (n: t.Node): t.Node => {
    if (shareLeaves && (n.type === "Identifier" || hasAnno(n, Anno.OPAQUE))) return n;
    const c = { ...n } as unknown as Record<string, unknown>;
    for (const k of t.visitorKeys(n.type) ?? []) {
      const v = c[k];
      if (Array.isArray(v)) c[k] = v.map((x) => (x && typeof x === "object" && typeof (x as t.Node).type === "string" ? copy(x as t.Node) : x));
      else if (v && typeof v === "object" && typeof (v as t.Node).type === "string") c[k] = copy(v as t.Node);
    }
    copyAnnotations(n, c as unknown as t.Node);
    return c as unknown as t.Node;
  };
  return copy(node) as N;
}
