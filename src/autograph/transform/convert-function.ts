/**
 * Converts one function: normalize -> lower jumps -> analyses (scopes, activity, liveness)
 * -> converters -> a new function node (the input is not modified). Nested functions are left
 * as they are (each gets its own converted twin; see convert.ts).
 */
import * as t from "./build.js";
import { identifierNames, bodyList, withLoc, unwrapTS, usesSuper, childNodes } from "./ast.js";
import { NameGen } from "./names.js";
import { normalizeFunction } from "./normalize.js";
import { Lowering, type LoweringResult } from "./converters/jumps.js";
import { analyzeScopes, type ScopeInfo, type VarKey } from "./analyses/scope.js";
import { activityOf, capturedKeys } from "./analyses/activity.js";
import { computeLiveness } from "./analyses/liveness.js";
import type { ConvertContext, Feature, StateInfo } from "./converters/context.js";
import { convertIf, convertIfExp } from "./converters/control-flow.js";
import { convertForOf, convertWhile } from "./converters/loops.js";
import { convertLogical } from "./converters/logical.js";
import { COMPOUND_OPS, convertBinary, convertCompoundToVariableOrProperty, convertUnary, convertUpdate, nativeMember } from "./converters/operators.js";
import { convertIndexAssignment, convertIndexRead, convertIndexUpdate } from "./converters/indexing.js";
import { convertArgs, convertCall } from "./converters/calls.js";
import { convertIfThrow, isIfThrow } from "./converters/asserts.js";
import { ConversionError } from "./errors.js";

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

const NON_ASSIGNABLE_FREE = new Set(["arguments", "eval", "undefined", "NaN", "Infinity", "globalThis"]);
const ASSIGNABLE_KINDS = new Set(["var", "let", "param", "hoisted"]);

function reason(fn: t.Function): string | null {
  if (fn.async && fn.generator) return "async generator functions are left unconverted";
  if (fn.async) return "async functions are left unconverted";
  if (fn.generator) return "generator functions are left unconverted";
  if ((fn.type === "ClassMethod" || fn.type === "ObjectMethod" || fn.type === "ClassPrivateMethod") && fn.kind !== "method") {
    return `${fn.kind === "constructor" ? "constructors" : "getters and setters"} are not converted`;
  }
  return null;
}

/** Why a function cannot be converted (async, generator, constructor...), or null. */
export function unconvertibleReason(fn: t.Function): string | null {
  return reason(fn);
}

/** State of each converted construct: modified variables, defined outside it, live after it. */
function computeStates(body: t.BlockStatement, scopes: ScopeInfo, lowering: LoweringResult): Map<t.Node, StateInfo> {
  const captured = capturedKeys(body, scopes);
  const { liveOut, liveInBranches, liveHead } = computeLiveness(body.body, scopes, lowering.forOfExit);
  const states = new Map<t.Node, StateInfo>();
  const visit = (n: t.Node): void => {
    if (t.isFunction(n) || t.isClass(n)) return;
    const isIf = n.type === "IfStatement" && !lowering.nativeIfs.has(n) && !isIfThrow(n);
    const isLoop = n.type === "WhileStatement" || (n.type === "ForOfStatement" && !n.await);
    if (isIf || isLoop) {
      // An if carries what it modifies that is live after it, or read by a branch (a staged
      // if restores those between tracing its branches); a loop, what is live at its head.
      const live = isIf ? new Set([...(liveOut.get(n) ?? []), ...(liveInBranches.get(n) ?? [])]) : (liveHead.get(n) ?? new Set<VarKey>());
      const act = activityOf(n, scopes);
      const start = scopes.order(n);
      const end = scopes.end(n);
      const keys: VarKey[] = [];
      for (const k of new Set([...act.assigned, ...act.memberWritten])) {
        if (scopes.isLocal(k)) {
          const d = scopes.declOrder(k);
          if (d >= start && d <= end) continue; // declared inside the construct
          const kind = scopes.kindOf(k);
          if (d > end && kind !== "var" && kind !== "hoisted" && kind !== "param") continue; // declared after: in its TDZ here
          if (!live.has(k) && !captured.has(k)) continue;
        } else if (NON_ASSIGNABLE_FREE.has(scopes.nameOf(k))) continue;
        keys.push(k);
      }
      keys.sort((a, b) => scopes.declOrder(a) - scopes.declOrder(b) || scopes.nameOf(a).localeCompare(scopes.nameOf(b)));
      states.set(n, {
        names: keys.map((k) => scopes.nameOf(k)),
        assignable: keys.map((k) => (scopes.isLocal(k) ? ASSIGNABLE_KINDS.has(scopes.kindOf(k)) : act.assigned.has(k))),
      });
    }
    for (const c of childNodes(n)) visit(c);
  };
  visit(body);
  return states;
}

/** Expressions whose value is never undefined (a lowered `return` of one needs no ag.ret). */
function neverUndefined(e: t.Expression): boolean {
  if (e.type === "UnaryExpression") return e.operator !== "void";
  return (
    (t.isLiteral(e) && e.type !== "TemplateLiteral") ||
    e.type === "TemplateLiteral" ||
    e.type === "ArrayExpression" ||
    e.type === "ObjectExpression" ||
    e.type === "BinaryExpression" ||
    e.type === "NewExpression" ||
    t.isFunction(e) ||
    t.isClass(e)
  );
}

class Converter implements ConvertContext {
  readonly features = new Set<Feature>();
  readonly temps: string[] = [];
  tempsAllowed = true;
  readonly stateParam: string;
  constructor(
    readonly agName: string,
    readonly names: NameGen,
    private readonly filename: string,
    private readonly scopes: ScopeInfo,
    private readonly states: Map<t.Node, StateInfo>,
    private readonly lowering: LoweringResult | null,
    private readonly outerBinding: (name: string) => boolean,
    readonly fallbackNode: t.Node,
    readonly strict: boolean,
    nativeCopies: boolean,
  ) {
    this.stateParam = names.fresh("$s");
    if (!nativeCopies) this.closureDepth = 1;
  }

  private closureDepth = 0;

  get nativeCopies(): boolean {
    return this.closureDepth === 0;
  }

  closureForm<T>(fn: () => T): T {
    this.closureDepth++;
    try {
      return fn();
    } finally {
      this.closureDepth--;
    }
  }

  feature(f: Feature): void {
    this.features.add(f);
  }

  isAg(e: t.Node): boolean {
    const base = e.type === "MemberExpression" ? e.object : e;
    return base.type === "Identifier" && base.name === this.agName && !this.scopes.isLocal(this.scopes.keyOf(base));
  }

  isShadowed(name: string, at: t.Identifier): boolean {
    return this.scopes.isLocal(this.scopes.keyOf(at)) || this.outerBinding(name);
  }

  isAssignableLocal(id: t.Identifier): boolean {
    const k = this.scopes.keyOf(id);
    return this.scopes.isLocal(k) && ASSIGNABLE_KINDS.has(this.scopes.kindOf(k));
  }

  temp(base = "$t"): string {
    if (!this.tempsAllowed) throw new Error("internal: temporaries are not allowed here");
    const n = this.names.fresh(base);
    this.temps.push(n);
    return n;
  }

  agCall(name: string, args: t.Expression[], at?: t.Node | null): t.CallExpression {
    let callee: t.Expression = t.identifier(this.agName);
    for (const part of name.split(".")) callee = t.memberExpression(callee, t.identifier(part));
    return withLoc(t.callExpression(callee, args), at);
  }

  loc(node: t.Node): t.StringLiteral {
    const l = node.loc ?? this.fallbackNode.loc;
    const line = l?.start.line ?? 0;
    const col = (l?.start.column ?? 0) + 1;
    return t.stringLiteral(`${this.filename}:${line}:${col}`);
  }

  state(node: t.Node): StateInfo {
    return this.states.get(node) ?? { names: [], assignable: [] };
  }

  // ---- statements ---------------------------------------------------------------------

  stmts(list: readonly t.Statement[]): t.Statement[] {
    const out: t.Statement[] = [];
    for (const s of list) out.push(this.stmt(s));
    return out;
  }

  private block(b: t.BlockStatement): t.BlockStatement {
    return withLoc(t.blockStatement(this.stmts(b.body), b.directives), b);
  }

  stmt(s: t.Statement): t.Statement {
    switch (s.type) {
      case "ExpressionStatement":
        return withLoc(t.expressionStatement(this.expr(s.expression, false)), s);
      case "VariableDeclaration":
        return withLoc(
          t.variableDeclaration(
            s.kind,
            s.declarations.map((d) => {
              const init = d.init ? this.expr(d.init) : this.isTdzHoisted(d.id) ? t.memberExpression(t.identifier(this.agName), t.identifier("UNDEFINED")) : null;
              return withLoc(t.variableDeclarator(d.id, init), d);
            }),
          ),
          s,
        );
      case "IfStatement": {
        if (this.lowering?.nativeIfs.has(s)) return this.nativeJumpIf(s);
        const th = isIfThrow(s);
        if (th) return convertIfThrow(this, s, th);
        return convertIf(this, s);
      }
      case "WhileStatement":
        this.feature("loop");
        return convertWhile(this, s);
      case "ForOfStatement":
        if (s.await) return withLoc(t.forOfStatement(s.left, this.expr(s.right), t.blockStatement(this.stmts(bodyList(s.body)))), s);
        this.feature("loop");
        return convertForOf(this, s, this.lowering?.forOfExit.get(s) ?? []);
      case "ForInStatement":
        return withLoc(t.forInStatement(s.left, this.expr(s.right), t.blockStatement(this.stmts(bodyList(s.body)))), s);
      case "ForStatement":
        return withLoc(
          t.forStatement(
            s.init ? (s.init.type === "VariableDeclaration" ? (this.stmt(s.init) as t.VariableDeclaration) : this.expr(s.init, false)) : null,
            s.test ? this.expr(s.test) : null,
            s.update ? this.expr(s.update, false) : null,
            t.blockStatement(this.stmts(bodyList(s.body))),
          ),
          s,
        );
      case "DoWhileStatement":
        return withLoc(t.doWhileStatement(this.expr(s.test), t.blockStatement(this.stmts(bodyList(s.body)))), s);
      case "BlockStatement":
        return this.block(s);
      case "LabeledStatement":
        return withLoc(t.labeledStatement(s.label, this.stmt(s.body)), s);
      case "SwitchStatement":
        this.feature("if");
        return withLoc(
          t.switchStatement(
            this.agCall("switchValue", [this.expr(s.discriminant), this.loc(s)], s.discriminant),
            s.cases.map((c) => withLoc(t.switchCase(c.test ? this.expr(c.test) : null, this.stmts(c.consequent)), c)),
          ),
          s,
        );
      case "TryStatement":
        return withLoc(
          t.tryStatement(
            this.block(s.block),
            s.handler ? withLoc(t.catchClause(s.handler.param ?? null, this.block(s.handler.body)), s.handler) : null,
            s.finalizer ? this.block(s.finalizer) : null,
          ),
          s,
        );
      case "ReturnStatement": {
        const r = this.lowering?.returns;
        if (r && s === r.final) {
          // return ag.retval($retval[, $ret, loc]): undefined for a `return;`; an error when a
          // staged condition decides between returning and reaching the end of the function.
          const args: t.Expression[] = [t.identifier(r.value)];
          if (r.endReachable) args.push(t.identifier(r.flag), this.loc(this.fallbackNode));
          return withLoc(t.returnStatement(this.agCall("retval", args)), s);
        }
        return withLoc(t.returnStatement(s.argument ? this.expr(s.argument) : null), s);
      }
      case "ThrowStatement":
        return withLoc(t.throwStatement(this.expr(s.argument)), s);
      case "WithStatement":
        throw new ConversionError("`with` statements cannot be converted", { file: this.filename, line: s.loc?.start.line ?? 0, column: s.loc?.start.column ?? 0 });
      default:
        return s;
    }
  }

  /**
   * A jump re-issued natively from its flag (`if ($brk) break L;`). Flags are JS booleans unless
   * a staged `if` set them; such a flag cannot leave a native construct: a TypeError says so.
   */
  private nativeJumpIf(s: t.IfStatement): t.Statement {
    const flag = (s.test as t.Identifier).name;
    const message = `autograph: a jump (break, continue or return) under an if whose condition is a staged tensor cannot leave a for...in loop, a switch or a labeled block (at ${this.loc(s).value}); use a for...of or while loop, or a condition known while tracing`;
    const isTrue = t.binaryExpression("===", t.identifier(flag), t.booleanLiteral(true));
    const notFalse = t.binaryExpression("!==", t.identifier(flag), t.booleanLiteral(false));
    const fail = this.agCall("assertOrThrow", [t.booleanLiteral(true), t.arrowFunctionExpression([], t.newExpression(t.identifier("TypeError"), [t.stringLiteral(message)])), this.loc(s)]);
    const test = t.logicalExpression("||", isTrue, t.logicalExpression("&&", notFalse, fail));
    return withLoc(t.ifStatement(test, s.consequent), s);
  }

  // ---- expressions --------------------------------------------------------------------

  /** A declaration the lowering moved up: until its original place runs, the name is in its TDZ. */
  private isTdzHoisted(id: t.Node): boolean {
    return id.type === "Identifier" && !!this.lowering?.tdzHoisted.has(id);
  }

  /** Whether an identifier refers to a binding whose declaration the lowering moved up. */
  tdzChecked(id: t.Identifier): boolean {
    if (!this.lowering) return false;
    const k = this.scopes.keyOf(id);
    return typeof k !== "string" && this.lowering.tdzHoisted.has(k.identifier);
  }

  expr(e: t.Expression, valueUsed = true): t.Expression {
    switch (e.type) {
      case "Identifier":
        if (this.tdzChecked(e)) return this.agCall("tdz", [t.identifier(e.name), t.stringLiteral(e.name)], e);
        return e;
      case "BinaryExpression":
        return convertBinary(this, e);
      case "LogicalExpression":
        return convertLogical(this, e);
      case "UnaryExpression":
        return convertUnary(this, e);
      case "UpdateExpression":
        if (e.argument.type === "MemberExpression" && e.argument.computed) return convertIndexUpdate(this, e, valueUsed);
        return convertUpdate(this, e, valueUsed);
      case "AssignmentExpression":
        return this.assignment(e, valueUsed);
      case "ConditionalExpression":
        return convertIfExp(this, e);
      case "CallExpression":
        return convertCall(this, e);
      case "NewExpression":
        return withLoc(t.newExpression(this.expr(e.callee as t.Expression), convertArgs(this, e.arguments)), e);
      case "MemberExpression":
        if (this.isAg(e)) return e;
        if (e.computed) return convertIndexRead(this, e);
        return nativeMember(this, e);
      case "OptionalMemberExpression":
      case "OptionalCallExpression":
        return this.optionalChain(e);
      case "SequenceExpression": {
        const n = e.expressions.length;
        return withLoc(t.sequenceExpression(e.expressions.map((x, i) => this.expr(x, i === n - 1 ? valueUsed : false))), e);
      }
      case "ArrayExpression":
        return withLoc(
          t.arrayExpression(e.elements.map((x) => (x === null ? null : x.type === "SpreadElement" ? withLoc(t.spreadElement(this.expr(x.argument)), x) : this.expr(x)))),
          e,
        );
      case "ObjectExpression":
        return withLoc(
          t.objectExpression(
            e.properties.map((p) => {
              if (p.type === "SpreadElement") return withLoc(t.spreadElement(this.expr(p.argument)), p);
              if (p.type === "ObjectProperty") {
                const key = p.computed ? this.expr(p.key as t.Expression) : p.key;
                const value = t.isExpression(p.value) ? this.expr(p.value) : p.value;
                const shorthand = p.shorthand && value === p.value;
                return withLoc(t.objectProperty(key, value, p.computed, shorthand), p);
              }
              return p;
            }),
          ),
          e,
        );
      case "TemplateLiteral":
        return withLoc(t.templateLiteral(e.quasis, e.expressions.map((x) => (t.isExpression(x) ? this.expr(x) : x))), e);
      case "TaggedTemplateExpression":
        return withLoc(
          t.taggedTemplateExpression(
            e.tag.type === "MemberExpression" ? nativeMember(this, e.tag) : this.expr(e.tag),
            withLoc(t.templateLiteral(e.quasi.quasis, e.quasi.expressions.map((x) => (t.isExpression(x) ? this.expr(x) : x))), e.quasi),
          ),
          e,
        );
      case "ParenthesizedExpression":
        return this.expr(e.expression, valueUsed);
      case "TSAsExpression":
      case "TSNonNullExpression":
      case "TSTypeAssertion":
      case "TSSatisfiesExpression":
      case "TSInstantiationExpression":
        return this.expr(unwrapTS(e) as t.Expression, valueUsed);
      case "AwaitExpression":
        return withLoc(t.awaitExpression(this.expr(e.argument)), e);
      case "YieldExpression":
        return withLoc(t.yieldExpression(e.argument ? this.expr(e.argument) : null, e.delegate), e);
      case "SpreadElement" as string:
        return e;
      default:
        return e;
    }
  }

  private assignment(e: t.AssignmentExpression, valueUsed: boolean): t.Expression {
    const left = e.left;
    if (left.type === "MemberExpression" && left.computed) return convertIndexAssignment(this, e, valueUsed);
    const op = COMPOUND_OPS[e.operator];
    if (op) {
      const r = convertCompoundToVariableOrProperty(this, e, op);
      if (r) return r;
    }
    if (left.type === "MemberExpression") return withLoc(t.assignmentExpression(e.operator, nativeMember(this, left), this.expr(e.right)), e);
    // A lowered `return v` (`$retval = v`): ag.ret marks a returned undefined, which staged
    // control flow cannot carry (unlike "no return yet").
    if (left.type === "Identifier" && e.operator === "=" && left.name === this.lowering?.returns?.value && !neverUndefined(e.right)) {
      return withLoc(t.assignmentExpression("=", left, this.agCall("ret", [this.expr(e.right)], e)), e);
    }
    return withLoc(t.assignmentExpression(e.operator, left, this.expr(e.right)), e);
  }

  /** Optional chains stay native; their computed keys, arguments and root are converted. */
  private optionalChain(e: t.Expression): t.Expression {
    const go = (n: t.Expression): t.Expression => {
      if (n.type === "OptionalMemberExpression") {
        return withLoc(t.optionalMemberExpression(go(n.object), n.computed ? this.expr(n.property as t.Expression) : n.property, n.computed, n.optional), n);
      }
      if (n.type === "OptionalCallExpression") {
        return withLoc(t.optionalCallExpression(go(n.callee), convertArgs(this, n.arguments), n.optional), n);
      }
      if (n.type === "MemberExpression") return withLoc(t.memberExpression(go(n.object), n.computed ? this.expr(n.property as t.Expression) : n.property, n.computed), n);
      if (n.type === "CallExpression" && n.callee.type !== "V8IntrinsicIdentifier") return withLoc(t.callExpression(go(n.callee as t.Expression), convertArgs(this, n.arguments)), n);
      return this.expr(n);
    };
    return go(e);
  }

  /** Parameters: default values converted (without temporaries). */
  params(ps: t.Function["params"]): t.FunctionParameter[] {
    this.tempsAllowed = false;
    try {
      const conv = (p: t.Node): t.Node => {
        if (p.type === "AssignmentPattern") return withLoc(t.assignmentPattern(conv(p.left) as t.AssignmentPattern["left"], this.expr(p.right)), p);
        return p;
      };
      return ps.map((p) => conv(p) as t.FunctionParameter);
    } finally {
      this.tempsAllowed = true;
    }
  }
}

export function convertFunctionNode(original: t.Function, opts: ConvertFunctionOptions): ConvertedFunction {
  const why = reason(original);
  const where = { file: opts.filename, line: original.loc?.start.line ?? 0, column: original.loc?.start.column ?? 0 };
  if (why) throw new ConversionError(why, where, opts.lines);
  if (usesSuper(original)) throw new ConversionError("methods that use `super` are not converted", where, opts.lines);
  const agName = opts.agName ?? "ag";
  const fn = t.cloneNode(original, true, false);
  const names = new NameGen(identifierNames(fn));
  names.reserve(agName);
  normalizeFunction(fn);
  let lowering: LoweringResult | null = null;
  if (fn.body.type === "BlockStatement") lowering = new Lowering(names, agName).lowerFunctionBody(fn.body);
  const scopes = analyzeScopes(fn);
  const states = fn.body.type === "BlockStatement" && lowering ? computeStates(fn.body, scopes, lowering) : new Map<t.Node, StateInfo>();
  const directiveStrict = fn.body.type === "BlockStatement" && fn.body.directives.some((d) => d.value.value === "use strict");
  const isMethod = original.type === "ClassMethod" || original.type === "ClassPrivateMethod";
  const strict = opts.strict !== false || directiveStrict || isMethod;
  const conv = new Converter(agName, names, opts.filename, scopes, states, lowering, opts.outerBinding ?? (() => false), original, strict, opts.nativeCopies !== false);
  const params = conv.params(fn.params);
  let body: t.BlockStatement | t.Expression;
  if (fn.body.type === "BlockStatement") {
    body = withLoc(t.blockStatement(conv.stmts(fn.body.body), fn.body.directives), fn.body);
  } else {
    body = conv.expr(fn.body);
  }
  if (conv.temps.length > 0) {
    const decl = t.variableDeclaration("let", conv.temps.map((n) => t.variableDeclarator(t.identifier(n))));
    if (body.type === "BlockStatement") body.body.unshift(decl);
    else body = t.blockStatement([decl, withLoc(t.returnStatement(body), body)]);
  }
  let node: ConvertedFunction["node"];
  if (fn.type === "ArrowFunctionExpression") {
    node = t.arrowFunctionExpression(params, body, false);
  } else if (fn.type === "FunctionDeclaration") {
    node = t.functionDeclaration(fn.id ?? null, params, body as t.BlockStatement, false, false);
  } else {
    const idNode = fn.type === "FunctionExpression" ? (fn.id ?? null) : null;
    node = t.functionExpression(idNode, params, body as t.BlockStatement, false, false);
  }
  withLoc(node, original);
  return { node, features: conv.features, freeNames: scopes.freeNames, lexicalThisLike: scopes.lexicalThisLike };
}
