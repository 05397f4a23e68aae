/**
 * The AutoGraph pipeline for one function: an ordered list of passes, each with one job.
 * Nested functions are left as they are (each gets its own converted twin; see twins.ts).
 *
 * 1. Lowering (lowering/), plain JavaScript to plain JavaScript: declarations hoisted where
 *    JavaScript hoists them (so statements may move into closures), constants that need
 *    rebinding made `let`, single-exit branches (the rest after an `if` whose branch jumps goes
 *    into its other branch), then break/continue and then return lowered to flags, so that
 *    every branch and loop body that may become a closure has a single exit.
 * 2. Analyses (analyses/): scopes, then the state of each `if` and loop (what it modifies that
 *    is live after it, by activity and liveness), annotated on the construct.
 * 3. Converters (converters/), each rewriting one kind of construct into `ag.*` calls, in the
 *    order of CONVERTERS below (docs/autograph.md says why this order).
 *
 * The input is not modified (the pipeline works on a copy). Passes talk through annotations
 * (anno.ts), not through each other's code.
 */
import * as t from "./build.js";
import { childNodes, identifierNames, withLoc } from "./ast.js";
import { Anno, mark } from "./anno.js";
import { NameGen } from "./names.js";
import { ConversionError } from "./errors.js";
import { checkStatements, unconvertibleReason } from "./convertible.js";
import { usesSuper } from "./ast.js";
import { hoistDeclarations } from "./lowering/declarations.js";
import { rebindableConsts } from "./lowering/rebindable-consts.js";
import { restructureBranches } from "./lowering/branches.js";
import { lowerBreakContinue } from "./lowering/break-continue.js";
import { lowerReturns } from "./lowering/returns.js";
import type { LoweringContext } from "./lowering/flags.js";
import { endReachable } from "./analyses/exits.js";
import { analyzeScopes } from "./analyses/scope.js";
import { annotateStates } from "./analyses/state.js";
import type { Feature } from "./converters/context.js";
import { kindsIn, type Conversion, type ConverterPassClass } from "./converters/pass.js";
import { Asserts } from "./converters/asserts.js";
import { IfStatements } from "./converters/if-statements.js";
import { Loops } from "./converters/loops.js";
import { Switches } from "./converters/switch.js";
import { ConditionalExpressions } from "./converters/conditional-expressions.js";
import { LogicalExpressions } from "./converters/logical.js";
import { Logging } from "./converters/logging.js";
import { MathCalls } from "./converters/math.js";
import { Calls } from "./converters/calls.js";
import { Operators } from "./converters/operators.js";
import { Assignments } from "./converters/assignments.js";
import { Indexing } from "./converters/indexing.js";
import { TemporalDeadZone } from "./converters/tdz.js";

export { unconvertibleReason } from "./convertible.js";

/** What a lowering pass is given. */
interface LoweringInput {
  fn: t.Function;
  /** The function's body when it is a block (the jump passes have nothing to do otherwise). */
  body: t.BlockStatement | null;
  ctx: LoweringContext;
  /** Whether control can reach the end of the body as written (asked before any pass moves statements). */
  endReachable: boolean;
  /** The function's `loc` string. */
  functionLoc: t.StringLiteral;
}

/** A lowering pass: plain JavaScript to plain JavaScript, in place. */
export interface LoweringPass {
  readonly name: string;
  run(input: LoweringInput): void;
}

/**
 * The lowering passes in the order they run: each assumes the ones before it ran (branches
 * moves statements into branches only after declarations are where JavaScript hoists them;
 * the return pass finds the loops the break/continue pass made).
 */
export const LOWERING: readonly LoweringPass[] = [
  { name: "declarations", run: ({ fn }) => hoistDeclarations(fn) },
  { name: "rebindable-consts", run: ({ fn }) => rebindableConsts(fn) },
  { name: "branches", run: ({ body, ctx }) => body && restructureBranches(body, ctx.agName) },
  { name: "break-continue", run: ({ body, ctx }) => body && lowerBreakContinue(body, ctx) },
  { name: "returns", run: ({ body, ctx, endReachable, functionLoc }) => body && lowerReturns(body, ctx, endReachable, functionLoc) },
];

/**
 * The converters in the order they run. Statements first (they need the states the analyses
 * annotated on the `if`s and loops, and `if` must see `if (c) throw e` gone): asserts, if,
 * loops, switch. Then expressions: the conditional operator (its native copy depends on
 * whether it sits in a staged branch, which the `if` converter marks), logical operators,
 * console.log and Math before the other calls, calls, operators, assignments, element
 * indexing, and the TDZ checks last (after the converters that read a variable they write).
 */
export const CONVERTERS: readonly ConverterPassClass[] = [
  Asserts,
  IfStatements,
  Loops,
  Switches,
  ConditionalExpressions,
  LogicalExpressions,
  Logging,
  MathCalls,
  Calls,
  Operators,
  Assignments,
  Indexing,
  TemporalDeadZone,
];

/** The names of all passes, in order (lowering, then converters; the analyses run between them). */
export const PASSES: readonly string[] = [...LOWERING.map((p) => p.name), ...CONVERTERS.map((c) => c.passName)];

export interface ConvertFunctionOptions {
  /** File name used in `loc` strings. */
  filename: string;
  /** The identifier the generated code uses for the operators (default "ag"). */
  agName?: string;
  /** Whether a name is bound in a scope enclosing the function (shadowing a global). */
  outerBinding?: (name: string) => boolean;
  /** Source lines for error excerpts. */
  lines?: Map<number, string>;
  /** Strict-mode code (default true: modules, classes, TypeScript); a "use strict" body is strict anyway. */
  strict?: boolean;
  /** Give `if` and `?:` a native copy for JS-valued conditions (default true). */
  nativeCopies?: boolean;
  /**
   * The passes to run, by name (default: all; see PASSES). They run in the pipeline's order
   * whatever the order given, and each assumes those before it ran: for tests that show one
   * pass's job (say every lowering pass and one converter).
   */
  passes?: readonly string[];
  /** Skip a converter when the function has nothing it rewrites (default true; false for tests). */
  skipIdle?: boolean;
}

export interface ConvertedFunction {
  /** The converted function: same kind as the input; methods become function expressions. */
  node: t.FunctionExpression | t.ArrowFunctionExpression | t.FunctionDeclaration;
  /** What was rewritten. */
  features: Set<Feature>;
  /** Names the function uses that it does not declare. */
  freeNames: Set<string>;
  /** `this`/`arguments`/`super`/`new.target` taken from the enclosing scope (arrows). */
  lexicalThisLike: Set<string>;
}

/** Whether `e` calls the helper twins.ts wraps function expressions in: `(($f) => (ag.registerConverted($f, twin), $f))(fn)`. */
function isTwinRegistration(callee: t.Node, agName: string): boolean {
  if (callee.type !== "ArrowFunctionExpression" || callee.body.type !== "SequenceExpression") return false;
  const first = callee.body.expressions[0];
  return first?.type === "CallExpression" && isAgRef(first.callee, agName);
}

function isAgRef(e: t.Node, agName: string): boolean {
  const base = e.type === "MemberExpression" ? e.object : e;
  return base.type === "Identifier" && base.name === agName;
}

/**
 * Marks what no converter enters: the input's nested functions and classes, and its calls on
 * `ag` (twin registrations). The name `ag` stands for is fresh: the input does not use it.
 */
function markOpaque(fn: t.Function, agName: string): void {
  const visit = (n: t.Node): void => {
    if (t.isFunction(n) || t.isClass(n)) {
      mark(n, Anno.OPAQUE);
      return;
    }
    if (n.type === "CallExpression" && (isAgRef(n.callee, agName) || isTwinRegistration(n.callee, agName))) {
      mark(n, Anno.OPAQUE);
      return;
    }
    for (const c of childNodes(n)) visit(c);
  };
  for (const c of childNodes(fn)) visit(c);
}

function locString(filename: string, node: t.Node): t.StringLiteral {
  return t.stringLiteral(`${filename}:${node.loc?.start.line ?? 0}:${(node.loc?.start.column ?? 0) + 1}`);
}

export function convertFunctionNode(original: t.Function, opts: ConvertFunctionOptions): ConvertedFunction {
  const why = unconvertibleReason(original);
  const where = { file: opts.filename, line: original.loc?.start.line ?? 0, column: original.loc?.start.column ?? 0 };
  if (why) throw new ConversionError(why, where, opts.lines);
  if (usesSuper(original)) throw new ConversionError("methods that use `super` are not converted", where, opts.lines);
  checkStatements(original, opts.filename);
  const agName = opts.agName ?? "ag";
  const fn = t.cloneNode(original, true, false);
  const names = new NameGen(identifierNames(fn));
  names.reserve(agName);
  markOpaque(fn, agName);

  const runs = (name: string) => !opts.passes || opts.passes.includes(name);

  // 1. lowering
  const body = fn.body.type === "BlockStatement" ? fn.body : null;
  const input: LoweringInput = { fn, body, ctx: { names, agName }, endReachable: !body || endReachable(body.body), functionLoc: locString(opts.filename, original) };
  for (const pass of LOWERING) if (runs(pass.name)) pass.run(input);

  // 2. analyses
  const scopes = analyzeScopes(fn);
  if (body) annotateStates(body, scopes);

  // 3. converters
  const directiveStrict = !!body && body.directives.some((d) => d.value.value === "use strict");
  const isMethod = original.type === "ClassMethod" || original.type === "ClassPrivateMethod";
  const kinds = kindsIn(fn);
  const conv: Conversion = {
    agName,
    names,
    filename: opts.filename,
    scopes,
    outerBinding: opts.outerBinding ?? (() => false),
    fallbackNode: original,
    strict: opts.strict !== false || directiveStrict || isMethod,
    nativeCopies: opts.nativeCopies !== false,
    stateParam: names.fresh("$s"),
    features: new Set(),
    temps: [],
    comments: kinds.has("comments"),
  };
  // (A converter with nothing to rewrite in this function is skipped.)
  for (const Pass of CONVERTERS) {
    if (!runs(Pass.passName)) continue;
    if (opts.skipIdle !== false && !kinds.has("wrapped") && !Pass.rewrites.some((k) => kinds.has(k))) continue;
    new Pass(conv).run(fn);
    for (const k of Pass.adds ?? []) kinds.add(k);
  }

  // The temporaries, declared at the top of the function.
  let newBody: t.BlockStatement | t.Expression = fn.body;
  if (conv.temps.length > 0) {
    const decl = t.variableDeclaration("let", conv.temps.map((n) => t.variableDeclarator(t.identifier(n))));
    if (newBody.type === "BlockStatement") newBody.body.unshift(decl);
    else newBody = t.blockStatement([decl, withLoc(t.returnStatement(newBody), newBody)]);
  }
  const params = fn.params as t.FunctionParameter[];
  let node: ConvertedFunction["node"];
  if (fn.type === "ArrowFunctionExpression") {
    node = t.arrowFunctionExpression(params, newBody, false);
  } else if (fn.type === "FunctionDeclaration") {
    node = t.functionDeclaration(fn.id ?? null, params, newBody as t.BlockStatement, false, false);
  } else {
    const idNode = fn.type === "FunctionExpression" ? (fn.id ?? null) : null;
    node = t.functionExpression(idNode, params, newBody as t.BlockStatement, false, false);
  }
  withLoc(node, original);
  return { node, features: conv.features, freeNames: scopes.freeNames, lexicalThisLike: scopes.lexicalThisLike };
}
