/**
 * A converter pass: one job (one kind of construct) over the whole function, after the lowering
 * and the analyses. The pass's hooks (`statement`, `expression`) rewrite its constructs; every
 * other node is traversed the same way by every pass, in place (so the annotations on nodes a
 * pass does not rewrite stay valid for the next one):
 *
 * - the code a converter would see in JavaScript's evaluation: statements, expressions, the
 *   keys and objects of member expressions, call arguments, parameter defaults;
 * - not: assignment targets and binding patterns (identifiers written), the spine of an
 *   optional chain (it stays native: only its keys, arguments and root are converted), nested
 *   functions and classes of the input and its calls on `ag` (Anno.OPAQUE: each function has its
 *   own converted twin), nor the node itself of generated code left native (Anno.NATIVE).
 *
 * Parentheses and TypeScript wrappers (`x as T`, `x!`) around visited expressions are dropped.
 * Closures a converter generates (branches, loop bodies, thunks) are traversed like the code
 * around them; those given to `ag.ifStmt`/`ag.ifExp` as branches (Anno.STAGED_BRANCH) are
 * traversed with `nativeCopies` off.
 */
import * as t from "../build.js";
import { bodyList, unwrapTS, withLoc } from "../ast.js";
import type { NameGen } from "../names.js";
import type { ScopeInfo } from "../analyses/scope.js";
import { ASSIGNABLE_KINDS, type StateInfo } from "../analyses/state.js";
import { isThrowOnly } from "../analyses/exits.js";
import { Anno, annotations, getAnno, hasAnno, mark } from "../anno.js";
import type { ConvertContext, Feature } from "./context.js";

/** What the passes of one conversion share. */
export interface Conversion {
  readonly agName: string;
  readonly names: NameGen;
  readonly filename: string;
  readonly scopes: ScopeInfo;
  /** Whether a name is bound in a scope enclosing the function (shadowing a global). */
  readonly outerBinding: (name: string) => boolean;
  /** Where `loc` strings point for generated code without a position (the function). */
  readonly fallbackNode: t.Node;
  readonly strict: boolean;
  /** The option: give `if` and `?:` a native copy for JS-valued conditions. */
  readonly nativeCopies: boolean;
  readonly stateParam: string;
  /** What the passes rewrote. */
  readonly features: Set<Feature>;
  /** Function-level temporaries, in the order they were made. */
  readonly temps: string[];
  /** Whether the function has comments (the traversal drops those of what it rebuilds). */
  readonly comments: boolean;
}

const NO_STATE: StateInfo = { names: [], assignable: [] };

/** A converter pass, with what it looks for (so the pipeline skips it when a function has none). */
export interface ConverterPassClass {
  new (conv: Conversion): ConverterPass;
  /** Its name in the pipeline (pipeline.ts PASSES). */
  readonly passName: string;
  /**
   * The node types it rewrites, or pseudo-kinds: "ifThrow" (`if (c) throw e`), "compoundAssignment" (`x op= v`),
   * "computedMember" (`x[i]`), "name:console", "name:Math" (the identifier occurs), "tdz" (the
   * lowering moved a declaration up).
   */
  readonly rewrites: readonly string[];
  /** Kinds it may generate for a later pass (beyond those in the function already). */
  readonly adds?: readonly string[];
}

/**
 * The kinds a function's converters may meet (see ConverterPassClass.rewrites), in what they
 * traverse; "wrapped" when there are parentheses or TypeScript wrappers, which every pass drops
 * (the pipeline then runs every pass); "comments" when nodes carry comments.
 */
export function kindsIn(fn: t.Function): Set<string> {
  const kinds = new Set<string>();
  const visit = (n: t.Node): void => {
    if (hasAnno(n, Anno.OPAQUE)) return;
    kinds.add(n.type);
    if (n.leadingComments || n.trailingComments || n.innerComments) kinds.add("comments");
    switch (n.type) {
      case "Identifier":
        if (n.name === "console" || n.name === "Math") kinds.add(`name:${n.name}`);
        if (hasAnno(n, Anno.TDZ_HOISTED)) kinds.add("tdz");
        break;
      case "AssignmentExpression":
        if (n.operator !== "=") kinds.add("compoundAssignment");
        break;
      case "IfStatement":
        if (isThrowOnly(n)) kinds.add("ifThrow");
        break;
      case "MemberExpression":
        if (n.computed) kinds.add("computedMember");
        break;
      case "ParenthesizedExpression":
      case "TSAsExpression":
      case "TSNonNullExpression":
      case "TSTypeAssertion":
      case "TSSatisfiesExpression":
      case "TSInstantiationExpression":
        kinds.add("wrapped");
        break;
      default:
        break;
    }
    for (const k of t.visitorKeys(n.type) ?? []) {
      const v = (n as unknown as Record<string, unknown>)[k];
      if (Array.isArray(v)) {
        for (const c of v) if (c && typeof c === "object" && typeof (c as t.Node).type === "string") visit(c as t.Node);
      } else if (v && typeof v === "object" && typeof (v as t.Node).type === "string") visit(v as t.Node);
    }
  };
  for (const p of fn.params) visit(p);
  visit(fn.body);
  return kinds;
}

/**
 * The statements every pass traverses (rather than leaves as they are): they come out of the
 * conversion without the comments attached to them (comments stay on what is kept as written:
 * nested functions, identifiers, literals, jumps).
 */
const REBUILT_STATEMENTS: ReadonlySet<string> = new Set(["ExpressionStatement", "VariableDeclaration", "IfStatement", "WhileStatement", "ForOfStatement", "ForInStatement", "BlockStatement", "LabeledStatement", "SwitchStatement", "TryStatement", "ReturnStatement", "ThrowStatement"]);

/** Whether the traversal rebuilds an expression (see REBUILT_STATEMENTS): all but leaves and a few operators kept as written. */
function rebuilt(e: t.Expression): boolean {
  switch (e.type) {
    case "UnaryExpression":
      if (e.operator === "typeof" && e.argument.type === "Identifier") return false;
      if (e.operator === "delete") return e.argument.type === "MemberExpression";
      return !((e.operator === "-" || e.operator === "+") && (e.argument.type === "NumericLiteral" || e.argument.type === "BigIntLiteral"));
    case "UpdateExpression":
      return e.argument.type === "MemberExpression";
    case "BinaryExpression":
    case "LogicalExpression":
    case "AssignmentExpression":
    case "ConditionalExpression":
    case "CallExpression":
    case "NewExpression":
    case "MemberExpression":
    case "OptionalMemberExpression":
    case "OptionalCallExpression":
    case "SequenceExpression":
    case "ArrayExpression":
    case "ObjectExpression":
    case "TemplateLiteral":
    case "TaggedTemplateExpression":
    case "AwaitExpression":
    case "YieldExpression":
      return true;
    default:
      return false;
  }
}

function dropComments(n: t.Node): void {
  if (n.leadingComments) n.leadingComments = null;
  if (n.trailingComments) n.trailingComments = null;
  if (n.innerComments) n.innerComments = null;
}

export abstract class ConverterPass implements ConvertContext {
  tempsAllowed = true;
  private closureDepth: number;

  constructor(protected readonly conv: Conversion) {
    this.closureDepth = conv.nativeCopies ? 0 : 1;
  }

  /** This pass's rewrite of a statement, or undefined to traverse it. */
  protected statement(_s: t.Statement): t.Statement | undefined {
    return undefined;
  }

  /** This pass's rewrite of an expression, or undefined to traverse it. */
  protected expression(_e: t.Expression, _valueUsed: boolean): t.Expression | undefined {
    return undefined;
  }

  // ---- the context converters see -----------------------------------------------------

  get agName(): string {
    return this.conv.agName;
  }

  get names(): NameGen {
    return this.conv.names;
  }

  get stateParam(): string {
    return this.conv.stateParam;
  }

  get strict(): boolean {
    return this.conv.strict;
  }

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
    this.conv.features.add(f);
  }

  isAg(e: t.Node): boolean {
    let base = e;
    while (base.type === "MemberExpression") base = base.object;
    const scopes = this.conv.scopes;
    return base.type === "Identifier" && base.name === this.conv.agName && !scopes.isLocal(scopes.keyOf(base));
  }

  isShadowed(name: string, at: t.Identifier): boolean {
    return this.conv.scopes.isLocal(this.conv.scopes.keyOf(at)) || this.conv.outerBinding(name);
  }

  isAssignableLocal(id: t.Identifier): boolean {
    const scopes = this.conv.scopes;
    const k = scopes.keyOf(id);
    return scopes.isLocal(k) && ASSIGNABLE_KINDS.has(scopes.kindOf(k));
  }

  tdzChecked(id: t.Identifier): boolean {
    const k = this.conv.scopes.keyOf(id);
    return typeof k !== "string" && hasAnno(k.identifier, Anno.TDZ_HOISTED);
  }

  temp(base = "$t"): string {
    if (!this.tempsAllowed) throw new Error("internal: temporaries are not allowed here");
    const n = this.conv.names.fresh(base);
    this.conv.temps.push(n);
    return n;
  }

  agCall(name: string, args: t.Expression[], at?: t.Node | null): t.CallExpression {
    let callee: t.Expression = t.identifier(this.conv.agName);
    for (const part of name.split(".")) callee = t.memberExpression(callee, t.identifier(part));
    return withLoc(t.callExpression(callee, args), at);
  }

  loc(node: t.Node): t.StringLiteral {
    const l = node.loc ?? this.conv.fallbackNode.loc;
    const line = l?.start.line ?? 0;
    const col = (l?.start.column ?? 0) + 1;
    return t.stringLiteral(`${this.conv.filename}:${line}:${col}`);
  }

  state(node: t.Node): StateInfo {
    return getAnno(node, Anno.STATE) ?? NO_STATE;
  }

  // ---- running --------------------------------------------------------------------------

  /** Converts a function's parameter defaults (without temporaries) and body, in place. */
  run(fn: t.Function): void {
    this.tempsAllowed = false;
    try {
      for (const p of fn.params) if (p.type === "AssignmentPattern") p.right = this.expr(p.right);
    } finally {
      this.tempsAllowed = true;
    }
    if (fn.body.type === "BlockStatement") this.stmts(fn.body.body);
    else (fn as t.ArrowFunctionExpression).body = this.expr(fn.body);
  }

  // ---- statements -----------------------------------------------------------------------

  stmts(list: t.Statement[]): t.Statement[] {
    for (let i = 0; i < list.length; i++) list[i] = this.stmt(list[i]!);
    return list;
  }

  stmt(s: t.Statement): t.Statement {
    if (annotations(s)?.[Anno.OPAQUE.name]) return s;
    const r = this.statement(s);
    if (r) return r;
    if (this.conv.comments && REBUILT_STATEMENTS.has(s.type)) dropComments(s);
    switch (s.type) {
      case "ExpressionStatement":
        s.expression = this.expr(s.expression, false);
        return s;
      case "VariableDeclaration":
        for (const d of s.declarations) {
          dropComments(d);
          if (d.init) d.init = this.expr(d.init);
        }
        return s;
      case "IfStatement":
        s.test = this.expr(s.test);
        s.consequent = this.stmt(s.consequent);
        if (s.alternate) s.alternate = this.stmt(s.alternate);
        return s;
      case "WhileStatement":
        s.test = this.expr(s.test);
        s.body = this.stmt(s.body);
        return s;
      case "ForOfStatement":
      case "ForInStatement":
        s.right = this.expr(s.right);
        s.body = t.blockStatement(this.stmts(bodyList(s.body)));
        return s;
      case "BlockStatement":
        this.stmts(s.body);
        return s;
      case "LabeledStatement":
        s.body = this.stmt(s.body);
        return s;
      case "SwitchStatement":
        s.discriminant = this.expr(s.discriminant);
        for (const c of s.cases) {
          dropComments(c);
          if (c.test) c.test = this.expr(c.test);
          this.stmts(c.consequent);
        }
        return s;
      case "TryStatement":
        for (const b of [s.block, s.handler, s.handler?.body, s.finalizer]) if (b) dropComments(b);
        this.stmts(s.block.body);
        if (s.handler) this.stmts(s.handler.body.body);
        if (s.finalizer) this.stmts(s.finalizer.body);
        return s;
      case "ReturnStatement":
        if (s.argument) s.argument = this.expr(s.argument);
        return s;
      case "ThrowStatement":
        s.argument = this.expr(s.argument);
        return s;
      default:
        return s;
    }
  }

  // ---- expressions ----------------------------------------------------------------------

  expr(e: t.Expression, valueUsed = true): t.Expression {
    if (e.type === "ParenthesizedExpression") return this.expr(e.expression, valueUsed);
    if (e.type === "TSAsExpression" || e.type === "TSNonNullExpression" || e.type === "TSTypeAssertion" || e.type === "TSSatisfiesExpression" || e.type === "TSInstantiationExpression") {
      return this.expr(unwrapTS(e) as t.Expression, valueUsed);
    }
    const a = annotations(e);
    if (a?.[Anno.OPAQUE.name]) return e;
    if (!a?.[Anno.NATIVE.name]) {
      const r = this.expression(e, valueUsed);
      if (r) return r;
    }
    if (this.conv.comments && rebuilt(e)) dropComments(e);
    switch (e.type) {
      case "BinaryExpression":
        if (e.left.type !== "PrivateName") e.left = this.expr(e.left);
        e.right = this.expr(e.right);
        return e;
      case "LogicalExpression":
        e.left = this.expr(e.left);
        e.right = this.expr(e.right);
        return e;
      case "UnaryExpression":
        if (e.operator === "delete") {
          if (e.argument.type === "MemberExpression") this.member(e.argument);
        } else if (!((e.operator === "-" || e.operator === "+") && (e.argument.type === "NumericLiteral" || e.argument.type === "BigIntLiteral"))) {
          e.argument = this.expr(e.argument);
        }
        return e;
      case "UpdateExpression":
        if (e.argument.type === "MemberExpression") this.member(e.argument);
        return e;
      case "AssignmentExpression":
        if (e.left.type === "MemberExpression") this.member(e.left);
        e.right = this.expr(e.right);
        return e;
      case "ConditionalExpression":
        e.test = this.expr(e.test);
        e.consequent = this.expr(e.consequent);
        e.alternate = this.expr(e.alternate);
        return e;
      case "CallExpression": {
        const c = e.callee;
        if (c.type === "MemberExpression") this.member(c);
        else if (c.type !== "Super" && c.type !== "Import" && c.type !== "V8IntrinsicIdentifier") e.callee = this.expr(c);
        this.args(e.arguments);
        return e;
      }
      case "NewExpression":
        e.callee = this.expr(e.callee as t.Expression);
        this.args(e.arguments);
        return e;
      case "MemberExpression":
        this.member(e);
        return e;
      case "OptionalMemberExpression":
      case "OptionalCallExpression":
        this.chain(e);
        return e;
      case "SequenceExpression": {
        const n = e.expressions.length;
        for (let i = 0; i < n; i++) e.expressions[i] = this.expr(e.expressions[i]!, i === n - 1 ? valueUsed : false);
        return e;
      }
      case "ArrayExpression":
        for (let i = 0; i < e.elements.length; i++) {
          const x = e.elements[i];
          if (!x) continue;
          if (x.type === "SpreadElement") x.argument = this.expr(x.argument);
          else e.elements[i] = this.expr(x);
        }
        return e;
      case "ObjectExpression":
        for (const p of e.properties) {
          if (p.type === "SpreadElement") p.argument = this.expr(p.argument);
          else if (p.type === "ObjectProperty") {
            dropComments(p);
            if (p.computed) p.key = this.expr(p.key as t.Expression);
            if (t.isExpression(p.value)) {
              const v = this.expr(p.value);
              if (v !== p.value) {
                p.value = v;
                p.shorthand = false;
              }
            }
          }
        }
        return e;
      case "TemplateLiteral":
        this.templateExpressions(e);
        return e;
      case "TaggedTemplateExpression":
        if (e.tag.type === "MemberExpression") this.member(e.tag);
        else e.tag = this.expr(e.tag);
        this.templateExpressions(e.quasi);
        return e;
      case "AwaitExpression":
        e.argument = this.expr(e.argument);
        return e;
      case "YieldExpression":
        if (e.argument) e.argument = this.expr(e.argument);
        return e;
      case "ArrowFunctionExpression":
        // A closure this conversion generated (the input's functions are opaque).
        if (hasAnno(e, Anno.STAGED_BRANCH)) this.closureForm(() => this.closureBody(e));
        else this.closureBody(e);
        return e;
      default:
        return e;
    }
  }

  private closureBody(e: t.ArrowFunctionExpression): void {
    if (e.body.type === "BlockStatement") this.stmts(e.body.body);
    else e.body = this.expr(e.body);
  }

  /** A member expression used natively (not read through `ag.getItem`): its object and computed key. */
  member(m: t.MemberExpression): t.MemberExpression {
    if (m.object.type !== "Super") m.object = this.expr(m.object);
    if (m.computed) m.property = this.expr(m.property as t.Expression);
    return m;
  }

  /** Call arguments (spread arguments' operands). */
  args(list: t.CallExpression["arguments"]): t.CallExpression["arguments"] {
    for (let i = 0; i < list.length; i++) {
      const a = list[i]!;
      if (a.type === "SpreadElement") {
        dropComments(a);
        a.argument = this.expr(a.argument);
      } else if (a.type !== "ArgumentPlaceholder") list[i] = this.expr(a as t.Expression);
    }
    return list;
  }

  private templateExpressions(q: t.TemplateLiteral): void {
    for (let i = 0; i < q.expressions.length; i++) {
      const x = q.expressions[i]!;
      if (t.isExpression(x)) q.expressions[i] = this.expr(x);
    }
  }

  /** An optional chain stays native: its computed keys, arguments and root are converted. */
  private chain(n: t.Expression): t.Expression {
    switch (n.type) {
      case "OptionalMemberExpression":
      case "MemberExpression":
        n.object = this.chain(n.object as t.Expression);
        if (n.computed) n.property = this.expr(n.property as t.Expression);
        return n;
      case "OptionalCallExpression":
        n.callee = this.chain(n.callee);
        this.args(n.arguments);
        return n;
      case "CallExpression":
        if (n.callee.type === "V8IntrinsicIdentifier") return this.expr(n);
        n.callee = this.chain(n.callee as t.Expression);
        this.args(n.arguments);
        return n;
      default:
        return this.expr(n);
    }
  }
}

/** Marks a generated closure as a branch given to ag.ifStmt / ag.ifExp. */
export function stagedBranch(fn: t.ArrowFunctionExpression): t.ArrowFunctionExpression {
  return mark(fn, Anno.STAGED_BRANCH);
}
