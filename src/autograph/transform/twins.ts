/**
 * Converted twins: every function of a module (or nested in a function being converted) gets a
 * converted copy defined in the same scope, registered with `ag.registerConverted`:
 *     function f(x) { ... }        ->  ag.registerConverted(f, f$ag);   (at the top of the block)
 *                                      function f(x) { ... }
 *                                      function f$ag(x) { ...converted... }
 *     const g = (x) => ...;        ->  const g = (x) => ...;
 *                                      ag.registerConverted(g, (x) => ...converted...);
 *     xs.map((x) => ...)           ->  xs.map((($f) => (ag.registerConverted($f, (x) => ...converted...), $f))((x) => ...))
 *     class A { m(x) { ... } }     ->  class A { m(x) { ... } static { ag.registerConverted(this.prototype["m"], function (x) { ... }) } }
 *     ({ m(x) { ... } })           ->  (($obj) => (ag.registerConverted($obj["m"], function (x) { ... }), $obj))({ m(x) { ... } })
 * An anonymous function in a naming position (`{ f: () => ... }`) is wrapped as
 * `{ "f": () => ... }["f"]` so it keeps its inferred name. Twins see the same variables as the originals, so closures,
 * including later rebinding of free variables, keep working. Async functions, generators,
 * getters, setters, constructors and methods using `super` keep no twin.
 */
import * as t from "./build.js";
import { childNodes, identifierNames, patternIdentifiers, usesSuper, withLoc } from "./ast.js";
import { NameGen } from "./names.js";
import { convertFunctionNode, unconvertibleReason, type ConvertedFunction } from "./pipeline.js";
import { ConversionError } from "./errors.js";

export interface TwinOptions {
  filename: string;
  agName: string;
  names: NameGen;
  lines?: Map<number, string>;
  outerBinding?: (name: string) => boolean;
  /** Functions not to twin (the function being converted by convertFunctionSource). */
  skip?: t.Node;
  /** Called for each function that could not be converted (kept as it is). */
  onSkip?: (fn: t.Function, reason: string) => void;
  /** Strict-mode code (default true). */
  strict?: boolean;
  /** See ConvertFunctionOptions.nativeCopies. */
  nativeCopies?: boolean;
  /** See ConvertFunctionOptions.passes. */
  passes?: readonly string[];
}

function agMember(agName: string, name: string): t.MemberExpression {
  return t.memberExpression(t.identifier(agName), t.identifier(name));
}

/** `ag.registerConverted(orig, twin)` (a statement: its value is not used). */
function registerCall(o: TwinOptions, orig: t.Expression, twin: t.Expression): t.CallExpression {
  return t.callExpression(agMember(o.agName, "registerConverted"), [orig, twin]);
}

/** `(($f) => (ag.registerConverted($f, twin), $f))(orig)`: registers and gives the original. */
function registerExpr(o: TwinOptions, orig: t.Expression, twin: t.Expression): t.Expression {
  const f = o.names.fresh("$f");
  const helper = t.arrowFunctionExpression([t.identifier(f)], t.sequenceExpression([registerCall(o, t.identifier(f), twin), t.identifier(f)]));
  return t.callExpression(helper, [orig]);
}

/** `{ "name": fn }["name"]`: keeps the name an anonymous function would get from its position. */
function named(fn: t.Expression, name: string | null): t.Expression {
  if (!name) return fn;
  return t.memberExpression(t.objectExpression([t.objectProperty(t.stringLiteral(name), fn)]), t.stringLiteral(name), true);
}

export function staticKeyName(key: t.Node, computed: boolean): string | null {
  if (!computed && key.type === "Identifier") return key.name;
  if (key.type === "StringLiteral") return key.value;
  if (key.type === "NumericLiteral") return String(key.value);
  return null;
}

function tryConvert(o: TwinOptions, fn: t.Function): ConvertedFunction | null {
  const why = unconvertibleReason(fn) ?? (fn.type !== "ArrowFunctionExpression" && usesSuper(fn) ? "methods that use `super` are not converted" : null);
  if (why) {
    o.onSkip?.(fn, why);
    return null;
  }
  try {
    const conv = convertFunctionNode(fn, { filename: o.filename, agName: o.agName, outerBinding: o.outerBinding, lines: o.lines, strict: o.strict, nativeCopies: o.nativeCopies, passes: o.passes });
    // Nothing rewritten: the twin would be the original (ag.call then calls it as it is).
    return conv.features.size === 0 ? null : conv;
  } catch (e) {
    if (e instanceof ConversionError) {
      o.onSkip?.(fn, e.message);
      return null;
    }
    throw e;
  }
}

function isAnonymousFunctionExpr(e: t.Node | null | undefined): boolean {
  return !!e && ((e.type === "FunctionExpression" && !e.id) || e.type === "ArrowFunctionExpression");
}

/**
 * Gives every function under `root` a converted twin in the same scope (innermost first; each
 * twin is built from a function whose nested functions already have theirs). Edits `root` in place.
 */
export function addTwins(root: t.Node, o: TwinOptions): void {
  const visitStatements = (list: t.Statement[]): t.Statement[] => {
    const out: t.Statement[] = [];
    const regs: t.Statement[] = [];
    for (const s of list) {
      const decl =
        s.type === "FunctionDeclaration"
          ? s
          : (s.type === "ExportNamedDeclaration" || s.type === "ExportDefaultDeclaration") && s.declaration?.type === "FunctionDeclaration"
            ? s.declaration
            : null;
      if (decl && decl.id && decl !== o.skip) {
        visitChildren(decl);
        out.push(s);
        const conv = tryConvert(o, decl);
        if (conv && conv.node.type === "FunctionDeclaration") {
          const twinName = o.names.fresh(`${decl.id.name}$ag`);
          conv.node.id = t.identifier(twinName);
          out.push(conv.node);
          regs.push(withLoc(t.expressionStatement(registerCall(o, t.identifier(decl.id.name), t.identifier(twinName))), decl));
        }
        continue;
      }
      // `const f = (x) => ...;`: registered by a statement after the declaration (same scope).
      const vdecl = s.type === "VariableDeclaration" ? s : s.type === "ExportNamedDeclaration" && s.declaration?.type === "VariableDeclaration" ? s.declaration : null;
      if (vdecl) {
        const after: t.Statement[] = [];
        for (const d of vdecl.declarations) {
          if (d.id.type === "Identifier" && isAnonymousFunctionExpr(d.init)) {
            const fn = d.init as t.FunctionExpression | t.ArrowFunctionExpression;
            visitChildren(fn);
            const conv = tryConvert(o, fn);
            if (conv) after.push(withLoc(t.expressionStatement(registerCall(o, t.identifier(d.id.name), conv.node as t.Expression)), fn));
          } else {
            visitChildren(d);
          }
        }
        out.push(s, ...after);
        continue;
      }
      out.push(visit(s, null) as t.Statement);
    }
    return [...regs, ...out];
  };

  const visitChildren = (node: t.Node): void => {
    const rec = node as unknown as Record<string, unknown>;
    for (const key of t.visitorKeys(node.type) ?? []) {
      const v = rec[key];
      if (Array.isArray(v)) {
        const isStatementList =
          ((node.type === "Program" || node.type === "BlockStatement" || node.type === "StaticBlock" || node.type === "TSModuleBlock") && key === "body") ||
          (node.type === "SwitchCase" && key === "consequent");
        if (isStatementList) rec[key] = visitStatements(v as t.Statement[]);
        else rec[key] = v.map((c) => (c && typeof c === "object" ? visit(c as t.Node, hintFor(node, key, c as t.Node)) : c));
      } else if (v && typeof v === "object") {
        rec[key] = visit(v as t.Node, hintFor(node, key, v as t.Node));
      }
    }
  };

  /** The name an anonymous function gets from its position (`const f = () => ...`). */
  const hintFor = (parent: t.Node, key: string, child: t.Node): string | null => {
    if (!isAnonymousFunctionExpr(child)) return null;
    if (parent.type === "VariableDeclarator" && key === "init" && parent.id.type === "Identifier") return parent.id.name;
    if (parent.type === "AssignmentExpression" && key === "right" && parent.left.type === "Identifier") return parent.left.name;
    if (parent.type === "AssignmentPattern" && key === "right" && parent.left.type === "Identifier") return parent.left.name;
    if ((parent.type === "ObjectProperty" || parent.type === "ClassProperty") && key === "value") return staticKeyName(parent.key, parent.computed);
    return null;
  };

  const visit = (node: t.Node, hint: string | null): t.Node => {
    if (node === o.skip) {
      visitChildren(node);
      return node;
    }
    visitChildren(node);
    if (node.type === "FunctionExpression" || node.type === "ArrowFunctionExpression") {
      const conv = tryConvert(o, node);
      if (!conv) return node;
      return withLoc(registerExpr(o, named(node, hint), conv.node as t.Expression), node);
    }
    if (node.type === "ClassDeclaration" || node.type === "ClassExpression") {
      const regs: t.Statement[] = [];
      for (const m of node.body.body) {
        if (m.type !== "ClassMethod" || m.kind !== "method") continue;
        const name = staticKeyName(m.key, m.computed);
        if (name === null) continue;
        const conv = tryConvert(o, m);
        if (!conv) continue;
        const owner: t.Expression = m.static ? t.thisExpression() : t.memberExpression(t.thisExpression(), t.identifier("prototype"));
        const orig = t.memberExpression(owner, t.stringLiteral(name), true);
        regs.push(withLoc(t.expressionStatement(registerCall(o, orig, conv.node as t.Expression)), m));
      }
      if (regs.length > 0) node.body.body.push(t.staticBlock(regs));
      return node;
    }
    if (node.type === "ObjectExpression") {
      const regs: t.Expression[] = [];
      const obj = o.names.fresh("$obj");
      for (const p of node.properties) {
        if (p.type !== "ObjectMethod" || p.kind !== "method") continue;
        const name = staticKeyName(p.key, p.computed);
        if (name === null) continue;
        const conv = tryConvert(o, p);
        if (!conv) continue;
        regs.push(registerCall(o, t.memberExpression(t.identifier(obj), t.stringLiteral(name), true), conv.node as t.Expression));
      }
      if (regs.length === 0) return node;
      const helper = t.arrowFunctionExpression([t.identifier(obj)], t.sequenceExpression([...regs, t.identifier(obj)]));
      return withLoc(t.callExpression(helper, [node]), node);
    }
    return node;
  };

  visitChildren(root);
}

/** Names bound anywhere in a tree (declarations, parameters, imports): conservative shadowing test. */
export function boundNames(root: t.Node): Set<string> {
  const out = new Set<string>();
  const visit = (n: t.Node): void => {
    switch (n.type) {
      case "VariableDeclarator":
        patternIdentifiers(n.id).forEach((i) => out.add(i.name));
        break;
      case "FunctionDeclaration":
      case "FunctionExpression":
      case "ClassDeclaration":
      case "ClassExpression":
        if (n.id) out.add(n.id.name);
        break;
      case "ImportSpecifier":
      case "ImportDefaultSpecifier":
      case "ImportNamespaceSpecifier":
        out.add(n.local.name);
        break;
      case "CatchClause":
        if (n.param) patternIdentifiers(n.param).forEach((i) => out.add(i.name));
        break;
      default:
        break;
    }
    if (t.isFunction(n)) for (const p of n.params) patternIdentifiers(p).forEach((i) => out.add(i.name));
    for (const c of childNodes(n)) visit(c);
  };
  visit(root);
  return out;
}

/**
 * Calls in a module's top-level code (outside functions and classes) go through the runtime, as
 * calls in converted code do: `main()` calls main's converted twin, and `sc.stage(sc.grad(loss))`
 * gives sc.grad loss's converted twin (Stagecraft's functions get converted callbacks), so the
 * code a module runs is converted code all the way down. The top-level statements themselves
 * (an `if` at module level) stay native.
 *   f(a)      ->  ag.callee(f)(a)
 *   o.m(a)    ->  ag.callMethod(o, "m", () => [a])
 */
function convertTopLevelCalls(program: t.Program, agName: string): void {
  const isAgName = (n: t.Node) => n.type === "Identifier" && n.name === agName;
  const rewrite = (node: t.Node): t.Node => {
    if (t.isFunction(node) || t.isClass(node)) return node;
    const rec = node as unknown as Record<string, unknown>;
    for (const k of t.visitorKeys(node.type) ?? []) {
      const v = rec[k];
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) if (v[i] && typeof v[i] === "object" && typeof (v[i] as t.Node).type === "string") v[i] = rewrite(v[i] as t.Node);
      } else if (v && typeof v === "object" && typeof (v as t.Node).type === "string") rec[k] = rewrite(v as t.Node);
    }
    if (node.type !== "CallExpression") return node;
    const callee = node.callee;
    if (callee.type === "Super" || callee.type === "Import" || callee.type === "V8IntrinsicIdentifier" || t.isFunction(callee) || isAgName(callee)) return node;
    if (callee.type === "Identifier" && (callee.name === "eval" || callee.name === "require")) return node;
    const ag = (name: string) => t.memberExpression(t.identifier(agName), t.identifier(name));
    if (callee.type === "MemberExpression") {
      if (callee.object.type === "Super" || callee.property.type === "PrivateName" || isAgName(callee.object)) return node;
      const key = callee.computed ? (callee.property as t.Expression) : t.stringLiteral((callee.property as t.Identifier).name);
      return withLoc(t.callExpression(ag("callMethod"), [callee.object as t.Expression, key, t.arrowFunctionExpression([], t.arrayExpression(node.arguments as t.Expression[]))]), node);
    }
    return withLoc(t.callExpression(withLoc(t.callExpression(ag("callee"), [callee as t.Expression]), callee), node.arguments), node);
  };
  program.body = program.body.map((s) => rewrite(s) as t.Statement);
}

/** Twins for a whole program, and the import of `ag` (shared by convertModule and the Babel plugin). */
export function convertProgram(program: t.Program, opts: { filename: string; runtime: string; lines?: Map<number, string>; usedNames?: Iterable<string> }): { agName: string } {
  const used = identifierNames(program);
  for (const n of opts.usedNames ?? []) used.add(n);
  const names = new NameGen(used);
  const agName = names.has("ag") ? names.fresh("ag$") : (names.reserve("ag"), "ag");
  const bound = boundNames(program);
  // (before the twins, so their registrations are not rewritten)
  convertTopLevelCalls(program, agName);
  addTwins(program, { filename: opts.filename, agName, names, lines: opts.lines, outerBinding: (n) => bound.has(n) });
  const imp = t.importDeclaration([t.importSpecifier(t.identifier(agName), t.identifier("ag"))], t.stringLiteral(opts.runtime));
  program.body.unshift(imp);
  return { agName };
}


export const DEFAULT_RUNTIME = "stagecraft/autograph-runtime";
