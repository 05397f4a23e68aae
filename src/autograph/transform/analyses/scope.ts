/**
 * Scope analysis: which variable each identifier of a function refers to, document order of
 * nodes (to tell declarations before and after a construct), and the function's free names.
 *
 * Scopes follow strict-mode JavaScript: functions (parameters, `var`, and the body's lexical
 * declarations), blocks, `for` heads with `let`/`const`, catch clauses, switch bodies, class
 * bodies and the names of function and class expressions. `var` is hoisted to the function;
 * function declarations to their block.
 *
 * Variables are identified by a `VarKey`: a Binding for names declared inside the analysed
 * function, or the string `free:name` for names declared outside it (or globals).
 */
import * as t from "../build.js";
import { childNodes, patternIdentifiers } from "../ast.js";

export interface Binding {
  name: string;
  /** "var", "let", "const", "param", "hoisted" (function declaration), "local" (function or class expression name), "module" (import). */
  kind: string;
  /** The declaring identifier. */
  identifier: t.Identifier;
}

export type VarKey = Binding | string;

class Scope {
  readonly bindings = new Map<string, Binding>();
  constructor(
    readonly parent: Scope | null,
    /** A function (or static block): where `var` goes. */
    readonly isFunction: boolean,
  ) {}
  lookup(name: string): Binding | null {
    for (let s: Scope | null = this; s; s = s.parent) {
      const b = s.bindings.get(name);
      if (b) return b;
    }
    return null;
  }
  functionScope(): Scope {
    let s: Scope = this;
    while (!s.isFunction && s.parent) s = s.parent;
    return s;
  }
}

export interface ScopeInfo {
  /** The variable an identifier (reference, assignment target or declaration) denotes. */
  keyOf(id: t.Identifier): VarKey;
  /** The variable `name` denotes at `node` (a node of the analysed tree). */
  keyAt(node: t.Node, name: string): VarKey;
  nameOf(key: VarKey): string;
  /** Declared inside the analysed function. */
  isLocal(key: VarKey): boolean;
  /** The binding kind (see Binding), or "free". */
  kindOf(key: VarKey): string;
  /** Document order of the binding's declaration (free names: -1). */
  declOrder(key: VarKey): number;
  /** Pre-order index of a node and the index after its last descendant. */
  order(node: t.Node): number;
  end(node: t.Node): number;
  /** Names used (read or written) in the function that are not declared in it. */
  freeNames: Set<string>;
  /** `this`, `arguments`, `super` or `new.target` used lexically (arrow functions only). */
  lexicalThisLike: Set<string>;
}

function isStatementListOwner(n: t.Node): boolean {
  return n.type === "BlockStatement" || n.type === "Program" || n.type === "StaticBlock" || n.type === "SwitchStatement" || n.type === "TSModuleBlock";
}

export function analyzeScopes(fn: t.Function): ScopeInfo {
  const orderMap = new Map<t.Node, number>();
  const endMap = new Map<t.Node, number>();
  const scopeOf = new Map<t.Node, Scope>();
  const declared = new Map<t.Identifier, Binding>();
  /** Identifiers to resolve, with the scope they occur in and whether they are a variable use. */
  const occurrences: { id: t.Identifier; scope: Scope; use: boolean }[] = [];
  const writeTargets = new Set<t.Identifier>();
  const lexicalThisLike = new Set<string>();
  const lexicalArguments = new Set<t.Identifier>();
  const isArrow = fn.type === "ArrowFunctionExpression";
  let counter = 0;

  const outer = new Scope(null, true);

  const declare = (scope: Scope, id: t.Identifier, kind: string): void => {
    const b: Binding = { name: id.name, kind, identifier: id };
    // A later `var` of the same name as a parameter or function keeps the first binding.
    const existing = scope.bindings.get(id.name);
    if (existing && (kind === "var" || existing.kind === "param")) {
      declared.set(id, existing);
      return;
    }
    scope.bindings.set(id.name, b);
    declared.set(id, b);
  };

  const declarePattern = (scope: Scope, p: t.Node, kind: string): void => {
    for (const id of patternIdentifiers(p)) declare(scope, id, kind);
  };

  /** Declarations that belong to the block `scope` from the statements directly in `list`. */
  const hoistList = (list: readonly t.Node[], scope: Scope): void => {
    for (const s of list) {
      const d = s.type === "ExportNamedDeclaration" || s.type === "ExportDefaultDeclaration" ? (s.declaration as t.Node | null) : s;
      if (!d) continue;
      if (d.type === "FunctionDeclaration" && d.id) declare(scope, d.id, "hoisted");
      else if (d.type === "ClassDeclaration" && d.id) declare(scope, d.id, "let");
      else if (d.type === "VariableDeclaration" && d.kind !== "var") for (const x of d.declarations) declarePattern(scope, x.id, d.kind === "const" ? "const" : "let");
      else if (d.type === "ImportDeclaration") for (const sp of d.specifiers) declare(scope, sp.local, "module");
    }
  };

  /** `var` declarations in a function body (not in nested functions). */
  const hoistVars = (node: t.Node, scope: Scope): void => {
    const visit = (n: t.Node): void => {
      if (n.type === "VariableDeclaration" && n.kind === "var") for (const d of n.declarations) declarePattern(scope, d.id, "var");
      if (t.isFunction(n) || t.isClass(n)) return;
      for (const c of childNodes(n)) visit(c);
    };
    visit(node);
  };

  /** Whether we are lexically inside `fn` with no non-arrow function or class in between. */
  const thisLikeDepth: boolean[] = [];

  const visit = (n: t.Node, parent: t.Node | null, grand: t.Node | null, scope: Scope): void => {
    orderMap.set(n, counter++);
    scopeOf.set(n, scope);
    let inner = scope;
    if (t.isFunction(n)) {
      if (n.type === "FunctionExpression" && n.id) {
        inner = new Scope(inner, false);
        declare(inner, n.id, "local");
      }
      inner = new Scope(inner, true);
      for (const p of n.params) declarePattern(inner, p.type === "TSParameterProperty" ? p.parameter : p, "param");
      if (n.body.type === "BlockStatement") {
        hoistVars(n.body, inner);
        hoistList(n.body.body, inner);
      }
    } else if (n.type === "ClassDeclaration" || n.type === "ClassExpression") {
      inner = new Scope(inner, false);
      if (n.id) declare(inner, n.id, "local");
    } else if (n.type === "StaticBlock") {
      inner = new Scope(inner, true);
      hoistVars(n, inner);
      hoistList(n.body, inner);
    } else if (isStatementListOwner(n)) {
      if (!(parent && t.isFunction(parent) && (parent as t.Function).body === n)) {
        inner = new Scope(inner, n.type === "Program");
        if (n.type === "SwitchStatement") for (const c of n.cases) hoistList(c.consequent, inner);
        else hoistList((n as t.BlockStatement).body, inner);
      }
    } else if (n.type === "ForStatement" || n.type === "ForInStatement" || n.type === "ForOfStatement") {
      const head = n.type === "ForStatement" ? n.init : n.left;
      if (head && head.type === "VariableDeclaration" && head.kind !== "var") {
        inner = new Scope(inner, false);
        for (const d of head.declarations) declarePattern(inner, d.id, head.kind === "const" ? "const" : "let");
      }
    } else if (n.type === "CatchClause") {
      inner = new Scope(inner, false);
      if (n.param) declarePattern(inner, n.param, "let");
    }
    switch (n.type) {
      case "Identifier":
        occurrences.push({ id: n, scope, use: parent ? t.isReferenced(n, parent, grand ?? undefined) || writeTargets.has(n) : true });
        if (n.name === "arguments" && thisLikeDepth.length === 0) lexicalArguments.add(n);
        break;
      case "AssignmentExpression":
        for (const id of patternIdentifiers(n.left)) writeTargets.add(id);
        break;
      case "UpdateExpression":
        if (n.argument.type === "Identifier") writeTargets.add(n.argument);
        break;
      case "ForInStatement":
      case "ForOfStatement":
        if (n.left.type !== "VariableDeclaration") for (const id of patternIdentifiers(n.left)) writeTargets.add(id);
        break;
      case "ThisExpression":
      case "Super":
      case "MetaProperty":
        if (isArrow && thisLikeDepth.length === 0) lexicalThisLike.add(n.type === "ThisExpression" ? "this" : n.type === "Super" ? "super" : "new.target");
        break;
      default:
        break;
    }
    const opensThis = n !== fn && ((t.isFunction(n) && n.type !== "ArrowFunctionExpression") || t.isClass(n));
    if (opensThis) thisLikeDepth.push(true);
    for (const c of childNodes(n)) visit(c, n, parent, inner);
    if (opensThis) thisLikeDepth.pop();
    endMap.set(n, counter++);
  };

  // (A function declaration's own name belongs to the enclosing scope: it stays free.)
  visit(fn, null, null, outer);

  const keys = new Map<t.Identifier, VarKey>();
  const freeNames = new Set<string>();
  for (const { id, scope, use } of occurrences) {
    const b = declared.get(id) ?? scope.lookup(id.name);
    if (b) {
      keys.set(id, b);
      continue;
    }
    keys.set(id, `free:${id.name}`);
    if (!use) continue;
    if (id.name === "arguments") {
      if (isArrow && lexicalArguments.has(id)) lexicalThisLike.add("arguments");
    } else freeNames.add(id.name);
  }

  return {
    keyOf(id) {
      return keys.get(id) ?? `free:${id.name}`;
    },
    keyAt(node, name) {
      return scopeOf.get(node)?.lookup(name) ?? `free:${name}`;
    },
    nameOf(key) {
      return typeof key === "string" ? key.slice(5) : key.name;
    },
    isLocal(key) {
      return typeof key !== "string";
    },
    kindOf(key) {
      return typeof key === "string" ? "free" : key.kind;
    },
    declOrder(key) {
      return typeof key === "string" ? -1 : (orderMap.get(key.identifier) ?? -1);
    },
    order(node) {
      return orderMap.get(node) ?? -1;
    },
    end(node) {
      return endMap.get(node) ?? -1;
    },
    freeNames,
    lexicalThisLike,
  };
}

