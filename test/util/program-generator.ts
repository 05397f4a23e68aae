/**
 * A seeded random-program generator for differential testing of AutoGraph (issue 4): it emits
 * the source text of small JavaScript function bodies over small integers, with bounded depth
 * and loop counts, using the constructs the transform rewrites: if/else-if/else, while with a
 * decreasing counter, do...while, for(;;), for...of over small arrays, break/continue (labeled
 * too, and inside switch and labeled blocks), early return, && || ?? !, ternaries, compound
 * assignment, ++/--, console.log, throw and try/catch/finally (jumps inside finally too),
 * closures created in loops and closures that update outer variables, a helper function with
 * its own loops and returns, array and object state (x[i] reads and writes, push/pop, members),
 * occasional strings mixed into the arithmetic, and the seams of issue 11: callbacks given to
 * array methods (map/reduce/filter/some, forEach updating outer variables), built-ins called or
 * passed as values (Math.abs, Number, isNaN), the helper through call/apply/bind, writes to
 * `arguments`, a `let` read in its temporal dead zone after an early return, and a `continue` in
 * a `finally` block that cancels the try block's pending return.
 *
 * Every program terminates natively by construction (loop counters are decremented first thing
 * in the body and never assigned elsewhere; for-loop variables are only read). Each loop body
 * also starts with `if (--fuel < 0) throw new Error("out of fuel")`, so converted code that
 * loops forever (say a `continue` that skips a for-loop update) throws instead of hanging,
 * and shows up as a divergence.
 *
 * The same seed always gives the same program.
 */
import { mulberry32 } from "./mulberry32.js";

/** The generator's choices, on the tests' seeded generator. */
class Prng {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }
  /** Picks a key with probability proportional to its weight (weights <= 0 are skipped). */
  weighted<K extends string>(weights: Record<K, number>): K {
    const entries = (Object.entries(weights) as [K, number][]).filter(([, w]) => w > 0);
    let r = this.next() * entries.reduce((a, [, w]) => a + w, 0);
    for (const [k, w] of entries) {
      r -= w;
      if (r < 0) return k;
    }
    return entries[entries.length - 1]![0];
  }
}

export interface GeneratorOptions {
  /** Maximum nesting of compound statements (default 3). */
  maxDepth?: number;
  /** Statements per block at most (default 4). */
  maxStatements?: number;
  /** Iterations per loop at most (default 4). */
  maxLoopCount?: number;
  /** Expression nesting at most (default 3). */
  maxExprDepth?: number;
  /** Number of argument triples to run each program with (default 3). */
  inputs?: number;
}

export interface GeneratedProgram {
  seed: number;
  /** Parameter names. */
  params: string[];
  /** The function body (for `new Function(...params, body)`). */
  body: string;
  /** Argument lists to run it with. */
  inputs: number[][];
  /** The whole function, for printing. */
  source: string;
}

interface Var {
  name: string;
  /** Whether statements may assign it (counters, loop variables and consts may not). */
  assignable: boolean;
}

/** An enclosing statement a `break`/`continue` may target. */
interface JumpFrame {
  label: string | null;
  /** Loops accept `continue` and unlabeled `break`; switches accept unlabeled `break`. */
  kind: "loop" | "switch" | "block";
}

const PARAMS = ["a", "b", "c"];
const CMP = ["<", ">", "===", "!==", "<=", ">="];

class Generator {
  private readonly rng: Prng;
  private readonly o: Required<GeneratorOptions>;
  private scopes: Var[][] = [];
  private jumps: JumpFrame[] = [];
  private fresh = 0;
  private logNo = 0;
  /** Names available in the current function (the helper sees only its own). */
  private fn: { arrays: boolean; helper: boolean; bump: string | null } = { arrays: false, helper: false, bump: null };

  constructor(seed: number, options: GeneratorOptions) {
    this.rng = new Prng(seed);
    this.o = {
      maxDepth: options.maxDepth ?? 3,
      maxStatements: options.maxStatements ?? 3,
      maxLoopCount: options.maxLoopCount ?? 4,
      maxExprDepth: options.maxExprDepth ?? 3,
      inputs: options.inputs ?? 3,
    };
  }

  // ---- names --------------------------------------------------------------------------------

  private name(prefix: string): string {
    return `${prefix}${this.fresh++}`;
  }
  private declare(name: string, assignable: boolean): void {
    this.scopes[this.scopes.length - 1]!.push({ name, assignable });
  }
  private visible(): Var[] {
    const seen = new Set<string>();
    const out: Var[] = [];
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      for (const v of this.scopes[i]!) {
        if (!seen.has(v.name)) {
          seen.add(v.name);
          out.push(v);
        }
      }
    }
    return out;
  }
  private readable(): string {
    return this.rng.pick(this.visible()).name;
  }
  private assignable(): string | null {
    const vs = this.visible().filter((v) => v.assignable);
    return vs.length ? this.rng.pick(vs).name : null;
  }
  private withScope<T>(f: () => T): T {
    this.scopes.push([]);
    try {
      return f();
    } finally {
      this.scopes.pop();
    }
  }
  private withJump<T>(frame: JumpFrame, f: () => T): T {
    this.jumps.push(frame);
    try {
      return f();
    } finally {
      this.jumps.pop();
    }
  }

  // ---- expressions --------------------------------------------------------------------------

  private lit(): string {
    const v = this.rng.int(-3, 9);
    return v < 0 ? `(${v})` : String(v);
  }

  private index(): string {
    return this.rng.chance(0.6) ? String(this.rng.int(0, 3)) : `(((${this.expr(this.o.maxExprDepth - 1)}) % 3 + 3) % 3)`;
  }

  /** A numeric expression (may produce booleans, null, strings or floats through the operators). */
  expr(depth = 0): string {
    const r = this.rng;
    if (depth >= this.o.maxExprDepth) return r.chance(0.5) ? this.lit() : this.readable();
    const f = this.fn;
    const k = r.weighted({
      lit: 3,
      var: 5,
      arith: 5,
      mod: 1,
      div: 0.5,
      cmp: 2,
      and: 1,
      or: 1,
      nullish: 1,
      not: 0.7,
      neg: 0.7,
      ternary: 1.5,
      tick: f.arrays ? 0.8 : 0,
      assign: 0.5,
      update: 0.4,
      paren: 0.3,
      element: f.arrays ? 0.8 : 0,
      member: f.arrays ? 0.5 : 0,
      length: f.arrays ? 0.2 : 0,
      bump: f.bump ? 0.4 : 0,
      helper: f.helper ? 0.4 : 0,
      string: 0.2,
      callback: 0.5,
      builtin: 0.4,
      helperVia: f.helper ? 0.3 : 0,
    });
    const sub = () => this.expr(depth + 1);
    switch (k) {
      case "lit":
        return this.lit();
      case "var":
        return this.readable();
      case "arith":
        return `(${sub()} ${r.pick(["+", "-", "*", "+", "-"])} ${sub()})`;
      case "mod":
        return `(${sub()} % ${r.int(2, 7)})`;
      case "div":
        return `(${sub()} / ${r.pick([2, 4, -2])})`;
      case "cmp":
        return `(${this.cond(depth + 1)})`;
      case "and":
        return `(${sub()} && ${sub()})`;
      case "or":
        return `(${sub()} || ${sub()})`;
      case "nullish":
        return `((${this.cond(depth + 1)} ? ${r.pick(["null", "undefined"])} : ${sub()}) ?? ${sub()})`;
      case "not":
        return `!(${sub()})`;
      case "neg":
        return `-(${sub()})`;
      case "ternary":
        return `(${this.cond(depth + 1)} ? ${sub()} : ${sub()})`;
      case "tick":
        return `tick(${sub()})`;
      case "assign": {
        const v = this.assignable();
        return v ? `(${v} ${r.pick(["=", "+=", "-="])} ${sub()})` : this.lit();
      }
      case "update": {
        const v = this.assignable();
        return v ? r.pick([`${v}++`, `${v}--`, `++${v}`, `--${v}`]) : this.lit();
      }
      case "paren":
        return `(${sub()})`;
      case "element":
        return `arr[${this.index()}]`;
      case "member":
        return r.pick(["obj.p", "obj.q", 'obj["p"]']);
      case "length":
        return "arr.length";
      case "bump":
        return `bump(${this.lit()})`;
      case "helper":
        return `helper(${sub()}, ${sub()})`;
      case "string":
        return `("s" + ${sub()})`;
      case "callback": {
        // A callback given to an array method, reading outer variables (its parameter is fresh).
        const q = this.name("q");
        const items = `[${sub()}, ${sub()}, ${this.lit()}]`;
        const inner = this.withScope(() => {
          this.declare(q, false);
          return this.expr(depth + 1);
        });
        switch (r.int(0, 3)) {
          case 0:
            return `${items}.map((${q}) => ${q} ${r.pick(["+", "-", "*"])} ${inner})[${r.int(0, 2)}]`;
          case 1:
            return `${items}.reduce((acc, ${q}) => acc ${r.pick(["+", "-"])} ${q} * ${inner}, ${this.lit()})`;
          case 2:
            return `${items}.filter((${q}) => ${q} ${r.pick(CMP)} ${inner}).length`;
          default:
            return `${items}.some((${q}) => ${q} ${r.pick(CMP)} ${inner})`;
        }
      }
      case "builtin":
        return r.pick([
          `[${sub()}, -(${sub()})].map(Math.abs)[${r.int(0, 1)}]`,
          `Math.max(${sub()}, ${sub()})`,
          `Number(${sub()})`,
          `isNaN(${sub()})`,
          `[${sub()}, ${sub()}].map(Number)[${r.int(0, 1)}]`,
        ]);
      case "helperVia":
        return r.pick([`helper.call(null, ${sub()}, ${sub()})`, `helper.apply(null, [${sub()}, ${sub()}])`, `helper.bind(null, ${sub()})(${sub()})`]);
    }
  }

  /** A condition (usually a comparison, sometimes any value: truthiness). */
  cond(depth = 0): string {
    const r = this.rng;
    const sub = () => this.expr(Math.max(depth, this.o.maxExprDepth - 1));
    if (depth >= this.o.maxExprDepth) return `${this.readable()} ${r.pick(CMP)} ${this.lit()}`;
    const k = r.weighted({ cmp: 6, and: 1.5, or: 1.5, not: 1, truthy: 1 });
    switch (k) {
      case "cmp":
        return `${sub()} ${r.pick(CMP)} ${sub()}`;
      case "and":
        return `(${this.cond(depth + 1)}) && (${this.cond(depth + 1)})`;
      case "or":
        return `(${this.cond(depth + 1)}) || (${this.cond(depth + 1)})`;
      case "not":
        return `!(${this.cond(depth + 1)})`;
      case "truthy":
        return sub();
    }
  }

  // ---- statements ---------------------------------------------------------------------------

  private block(depth: number, indent: string, min = 1): string[] {
    return this.withScope(() => {
      const n = this.rng.int(min, this.o.maxStatements);
      const out: string[] = [];
      for (let i = 0; i < n; i++) out.push(...this.stmt(depth, indent));
      return out;
    });
  }

  private fuel(indent: string): string {
    return `${indent}if (--fuel < 0) throw new Error("out of fuel");`;
  }

  private label(): string | null {
    return this.rng.chance(0.3) ? this.name("L") : null;
  }

  private loopBody(depth: number, ind: string, label: string | null, head: string[]): string[] {
    return this.withJump({ label, kind: "loop" }, () => [this.fuel(ind), ...head, ...this.block(depth + 1, ind)]);
  }

  /** `break` / `continue` to a random target in scope (null when there is none). */
  private jump(kind: "break" | "continue"): string | null {
    const r = this.rng;
    const loops = this.jumps.filter((j) => j.kind === "loop");
    if (kind === "continue") {
      if (loops.length === 0) return null;
      const labeled = loops.filter((j) => j.label !== null);
      if (labeled.length > 0 && r.chance(0.35)) return `continue ${r.pick(labeled).label};`;
      return "continue;";
    }
    const labeled = this.jumps.filter((j) => j.label !== null);
    const unlabeledOk = this.jumps.some((j) => j.kind !== "block");
    if (labeled.length > 0 && (r.chance(0.35) || !unlabeledOk)) return `break ${r.pick(labeled).label};`;
    return unlabeledOk ? "break;" : null;
  }

  private stmt(depth: number, ind: string): string[] {
    const r = this.rng;
    const canNest = depth < this.o.maxDepth;
    const hasJumps = this.jumps.length > 0;
    const f = this.fn;
    const k = r.weighted({
      assign: 5,
      compound: 3,
      update: 1,
      log: 2,
      declare: 1.5,
      if: canNest ? 3 : 0,
      while: canNest ? 1.2 : 0,
      do: canNest ? 0.8 : 0,
      for: canNest ? 1.2 : 0,
      forOf: canNest ? 0.8 : 0,
      switch: canNest ? 0.4 : 0,
      labeledBlock: canNest ? 0.25 : 0,
      break: hasJumps ? 0.8 : 0,
      continue: hasJumps ? 0.8 : 0,
      return: 0.5,
      throw: 0.3,
      try: canNest ? 0.4 : 0,
      closure: f.arrays ? 0.6 : 0,
      element: f.arrays ? 1 : 0,
      push: f.arrays ? 0.4 : 0,
      pop: f.arrays ? 0.25 : 0,
      member: f.arrays ? 0.6 : 0,
      block: canNest ? 0.3 : 0,
      forEach: 0.4,
      argumentsWrite: f.arrays ? 0.25 : 0,
      tdz: f.arrays ? 0.2 : 0,
      finallyContinue: canNest && this.jumps.some((j) => j.kind === "loop") ? 0.3 : 0,
    });
    const inner = ind + "  ";
    switch (k) {
      case "assign": {
        const v = this.assignable();
        return v ? [`${ind}${v} = ${this.expr()};`] : [];
      }
      case "compound": {
        const v = this.assignable();
        if (!v) return [];
        const op = r.pick(["+=", "-=", "*=", "+=", "-="]);
        if (op === "*=") return [`${ind}${v} *= ${this.lit()};`, `${ind}${v} = ${v} % 1009;`];
        return [`${ind}${v} ${op} ${this.expr()};`];
      }
      case "update": {
        const v = this.assignable();
        return v ? [`${ind}${r.pick([`${v}++`, `${v}--`, `++${v}`, `--${v}`])};`] : [];
      }
      case "log": {
        const n = r.int(1, 2);
        const args = Array.from({ length: n }, () => this.expr(1));
        return [`${ind}console.log("L${this.logNo++}", ${args.join(", ")});`];
      }
      case "declare": {
        const isConst = r.chance(0.5);
        const name = this.name(isConst ? "k" : "w");
        const line = `${ind}${isConst ? "const" : "let"} ${name} = ${this.expr()};`;
        this.declare(name, !isConst);
        return [line];
      }
      case "if": {
        const out = [`${ind}if (${this.cond()}) {`, ...this.block(depth + 1, inner)];
        let more = r.int(0, 2);
        while (more-- > 0) {
          if (r.chance(0.5)) {
            out.push(`${ind}} else if (${this.cond()}) {`, ...this.block(depth + 1, inner));
          } else {
            out.push(`${ind}} else {`, ...this.block(depth + 1, inner));
            break;
          }
        }
        out.push(`${ind}}`);
        return out;
      }
      case "while": {
        const c = this.name("n");
        const label = this.label();
        const test = r.chance(0.3) ? `${c} > 0 && (${this.cond()})` : `${c} > 0`;
        const body = this.loopBody(depth, inner, label, [`${inner}${c}--;`]);
        return [`${ind}let ${c} = ${r.int(0, this.o.maxLoopCount)};`, `${ind}${label ? label + ": " : ""}while (${test}) {`, ...body, `${ind}}`];
      }
      case "do": {
        const c = this.name("n");
        const label = this.label();
        const test = r.chance(0.3) ? `${c} > 0 && (${this.cond()})` : `${c} > 0`;
        const body = this.loopBody(depth, inner, label, [`${inner}${c}--;`]);
        return [`${ind}let ${c} = ${r.int(1, this.o.maxLoopCount)};`, `${ind}${label ? label + ": " : ""}do {`, ...body, `${ind}} while (${test});`];
      }
      case "for": {
        const i = this.name("i");
        const label = this.label();
        const n = r.int(0, this.o.maxLoopCount);
        // Sometimes closures are created in the loop head (they see the initial binding) or in
        // the test (they see that iteration's binding).
        const init = this.fn.arrays && r.chance(0.1) ? `(fns.push(() => ${i}), 0)` : "0";
        const test = this.fn.arrays && r.chance(0.1) ? `(fns.push(() => ${i}), ${i} < ${n})` : `${i} < ${n}`;
        const head = r.chance(0.7) ? `let ${i} = ${init}; ${test}; ${i}++` : `let ${i} = ${n}; ${i} > 0; ${i} -= ${r.int(1, 2)}`;
        const body = this.withScope(() => {
          this.declare(i, false);
          return this.loopBody(depth, inner, label, []);
        });
        return [`${ind}${label ? label + ": " : ""}for (${head}) {`, ...body, `${ind}}`];
      }
      case "forOf": {
        const e = this.name("e");
        const label = this.label();
        const items = Array.from({ length: r.int(0, this.o.maxLoopCount) }, () => this.expr(2));
        const decl = r.chance(0.7) ? "const" : "let";
        const body = this.withScope(() => {
          this.declare(e, decl === "let");
          return this.loopBody(depth, inner, label, []);
        });
        return [`${ind}${label ? label + ": " : ""}for (${decl} ${e} of [${items.join(", ")}]) {`, ...body, `${ind}}`];
      }
      case "switch": {
        const out = [`${ind}switch (((${this.expr(1)}) % 3 + 3) % 3) {`];
        this.withJump({ label: null, kind: "switch" }, () => {
          for (const c of ["case 0:", "case 1:", "default:"]) {
            if (c !== "default:" && r.chance(0.2)) continue;
            out.push(`${inner}${c} {`, ...this.block(depth + 1, inner + "  ", 0));
            out.push(r.chance(0.7) ? `${inner}  break;` : `${inner}  // falls through`, `${inner}}`);
          }
        });
        out.push(`${ind}}`);
        return out;
      }
      case "labeledBlock": {
        const label = this.name("B");
        const body = this.withJump({ label, kind: "block" }, () => this.block(depth + 1, inner));
        return [`${ind}${label}: {`, ...body, `${ind}}`];
      }
      case "break":
      case "continue": {
        const jump = this.jump(k);
        if (!jump) return [];
        return r.chance(0.8) ? [`${ind}if (${this.cond()}) ${jump}`] : [`${ind}${jump}`];
      }
      case "return": {
        const v = r.chance(0.8) ? ` ${this.returnValue(this.expr())}` : "";
        return r.chance(0.85) ? [`${ind}if (${this.cond()}) return${v};`] : [`${ind}return${v};`];
      }
      case "throw":
        return [`${ind}if (${this.cond()}) throw new RangeError("E" + ${this.expr(1)});`];
      case "try": {
        const out = [`${ind}try {`, ...this.block(depth + 1, inner)];
        const hasCatch = r.chance(0.8);
        if (hasCatch) out.push(`${ind}} catch (err) {`, `${inner}console.log("caught", err.message);`, ...this.block(depth + 1, inner, 0));
        if (!hasCatch || r.chance(0.3)) out.push(`${ind}} finally {`, ...this.block(depth + 1, inner, 0));
        out.push(`${ind}}`);
        return out;
      }
      case "closure":
        if (r.chance(0.3)) {
          // Closures run after every loop has finished (fns.map at the end), so they may update
          // loop variables too: each sees its own per-iteration binding.
          const v = r.chance(0.5) ? this.readable() : this.assignable();
          if (v) return [`${ind}fns.push(() => (${v} += ${this.lit()}));`];
        }
        return [`${ind}fns.push(() => ${this.expr(1).replace(/tick\(|bump\(|helper\(/g, "(")});`];
      case "element":
        return [`${ind}arr[${this.index()}] ${r.pick(["=", "+=", "-="])} ${this.expr(1)};`];
      case "push":
        return [`${ind}arr.push(${this.expr(1)});`];
      case "pop":
        return [`${ind}${r.chance(0.5) ? "arr.pop();" : `${this.assignable() ?? "v0"} = arr.pop() ?? 0;`}`];
      case "member":
        return [`${ind}${r.pick(["obj.p", "obj.q", 'obj["q"]'])} ${r.pick(["=", "+=", "-="])} ${this.expr(1)};`];
      case "block":
        return [`${ind}{`, ...this.block(depth + 1, inner), `${ind}}`];
      case "forEach": {
        // A callback updating an outer variable.
        const v = this.assignable();
        if (!v) return [];
        const q = this.name("q");
        const items = Array.from({ length: r.int(1, 3) }, () => this.expr(2));
        return [`${ind}[${items.join(", ")}].forEach((${q}) => { if (${q} ${r.pick(CMP)} ${this.lit()}) ${v} ${r.pick(["+=", "-="])} ${q}; });`];
      }
      case "argumentsWrite":
        // (the function is sloppy code: the arguments object aliases the parameters)
        return [`${ind}arguments[${r.int(0, 2)}] ${r.pick(["=", "+=", "-="])} ${this.expr(1)};`];
      case "tdz": {
        // An early return reading a let declared after it: natively a ReferenceError when taken.
        const later = this.name("t");
        const lines = [`${ind}if (${this.cond()}) return ${this.returnValue(later)};`, `${ind}let ${later} = ${this.expr()};`];
        this.declare(later, true);
        return lines;
      }
      case "finallyContinue": {
        // A continue in a finally block cancels the try block's pending return.
        const body = this.block(depth + 1, inner);
        return [
          `${ind}try {`,
          ...body,
          `${inner}if (${this.cond()}) return ${this.returnValue(this.expr())};`,
          `${ind}} finally {`,
          `${inner}if (${this.cond()}) continue;`,
          `${ind}}`,
        ];
      }
    }
  }

  private returnValue(e: string): string {
    return this.fn.arrays ? `[${e}, arr.slice(), fns.length]` : e;
  }

  /** `function helper(x, y)`: its own scope and jumps; reads and writes only its parameters and locals. */
  private helper(): string[] {
    const saved = { scopes: this.scopes, jumps: this.jumps, fn: this.fn };
    this.scopes = [[{ name: "x", assignable: true }, { name: "y", assignable: true }]];
    this.jumps = [];
    this.fn = { arrays: false, helper: false, bump: null };
    try {
      const lines = ["  function helper(x, y) {"];
      const n = this.rng.int(1, this.o.maxStatements);
      for (let i = 0; i < n; i++) lines.push(...this.stmt(1, "    "));
      lines.push(`    return x * 2 + y;`, "  }");
      return lines;
    } finally {
      this.scopes = saved.scopes;
      this.jumps = saved.jumps;
      this.fn = saved.fn;
    }
  }

  program(seed: number): GeneratedProgram {
    const r = this.rng;
    const lines: string[] = [
      `  let fuel = 1000;`,
      `  const fns = [];`,
      `  const arr = [${r.pick(PARAMS)}, ${this.lit()}, ${this.lit()}];`,
      `  const obj = { p: ${r.pick(PARAMS)}, q: ${this.lit()} };`,
      `  const tick = (v) => { console.log("tick", v); return v; };`,
    ];
    this.scopes = [PARAMS.map((name) => ({ name, assignable: true }))];
    const nv = r.int(2, 3);
    for (let i = 0; i < nv; i++) {
      const name = `v${i}`;
      lines.push(`  let ${name} = ${i === 0 ? r.pick(PARAMS) : this.lit()};`);
      this.declare(name, true);
    }
    const hasHelper = r.chance(0.4);
    const hasBump = r.chance(0.4);
    if (hasHelper) lines.push(...this.helper());
    if (hasBump) lines.push(`  const bump = (d) => { v1 += d; return v1; };`);
    this.fn = { arrays: true, helper: hasHelper, bump: hasBump ? "v1" : null };
    const n = r.int(2, this.o.maxStatements + 2);
    for (let i = 0; i < n; i++) lines.push(...this.stmt(0, "  "));
    const vars = this.scopes[0]!.map((v) => v.name).join(", ");
    lines.push(`  return [${vars}, arr, obj, fns.map((f) => f())];`);
    const body = lines.join("\n");
    const inputs = Array.from({ length: this.o.inputs }, () => PARAMS.map(() => r.int(-4, 6)));
    return { seed, params: PARAMS, body, inputs, source: `function program(${PARAMS.join(", ")}) {\n${body}\n}` };
  }
}

/** The program for `seed` (the same seed always gives the same program). */
export function generateProgram(seed: number, options: GeneratorOptions = {}): GeneratedProgram {
  return new Generator(seed, options).program(seed);
}
