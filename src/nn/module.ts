/**
 * `sc.nn.Module`: the base class of layers and models. A module's attributes are tracked by
 * name: child modules, Variables, and arrays, Maps and plain objects of them. From them come
 * `parameters()`, `namedParameters()` (dotted paths such as "features.0.kernel"), the
 * checkpoint object graph (a Module is a Trackable), `train()`/`eval()` modes and `summary()`.
 *
 * Subclasses implement `forward(...)` and, when their variables depend on the input's shape,
 * `build(...)`: `call(...)` builds on the first call, outside any trace (`sc.initScope`), so a
 * model whose first call happens inside `sc.stage` still makes its variables once, eagerly.
 *
 * The mode (`training`) and the `trainable` flags are tracked state (core/tracked-state.ts): a
 * staged function whose trace read them (the model an argument, a closure's, a property of
 * `this`, or nested in another module) traces again, or reuses its trace of those values, when
 * they change: `model.eval()` after a train-mode trace runs an eval-mode graph.
 */
import { Tensor } from "../core/tensor.js";
import { Variable, variable } from "../core/variable.js";
import type { DType } from "../core/dtype.js";
import { ValueError } from "../core/errors.js";
import { isPlainObject } from "../core/objects.js";
import { checkOptions } from "../core/options.js";
import { initScope } from "../staging/host.js";
import { noteStateRead, stateChanged } from "../core/tracked-state.js";
import { Trackable } from "../io/trackable.js";
import type { Initializer } from "./init.js";

/** Watches module calls (summary() uses it to collect output shapes). */
type CallObserver = (m: Module, output: unknown) => void;
let callObserver: CallObserver | null = null;

const MODULE_FIELDS = new Set(["training", "trainable", "name"]);

/**
 * @internal A check run on every weight before its initializer allocates it: loadModel
 * (save-model.ts) sets it while it rebuilds a model from a config, to bound what the config's
 * sizes allocate by the size of the weights file.
 */
let weightGuard: ((shape: readonly number[], dtype: DType) => void) | null = null;
/** @internal Runs `f` with `guard` checking each weight made (see weightGuard). */
export function withWeightGuard<T>(guard: (shape: readonly number[], dtype: DType) => void, f: () => T): T {
  const saved = weightGuard;
  weightGuard = guard;
  try {
    return f();
  } finally {
    weightGuard = saved;
  }
}

export abstract class Module extends Trackable {
  private _training = true;
  private _trainable = true;
  private builtFlag = false;

  /** Train mode (the default) or eval mode; see train()/eval(). */
  get training(): boolean {
    noteStateRead(this, "training", this._training, () => this._training);
    return this._training;
  }
  set training(mode: boolean) {
    if (mode !== this._training) stateChanged();
    this._training = mode;
  }

  /** When false, this module's variables are left out of `parameters()` (frozen). */
  get trainable(): boolean {
    noteStateRead(this, "trainable", this._trainable, () => this._trainable);
    return this._trainable;
  }
  set trainable(flag: boolean) {
    if (flag !== this._trainable) stateChanged();
    this._trainable = flag;
  }

  /** The computation. Called by `call`, which builds the module first. */
  abstract forward(...args: any[]): any;

  /** Makes variables that depend on the first inputs' shapes (runs once, eagerly). */
  protected build(..._args: any[]): void {}

  /** Whether build() has run (modules that build nothing are built from the start). */
  get built(): boolean {
    return this.builtFlag;
  }

  /** Runs the module: builds it on the first call (outside any trace), then `forward`. */
  call(...args: any[]): any {
    if (!this.builtFlag) {
      initScope(() => this.build(...args));
      this.builtFlag = true;
    }
    const out = this.forward(...args);
    if (callObserver) callObserver(this, out);
    return out;
  }

  /** The class name, for summaries and errors. */
  get typeName(): string {
    return this.constructor.name;
  }

  /**
   * Makes a Variable owned by this module, eagerly (outside any trace), and applies a
   * checkpoint restore parked for it. `name` must be the attribute the module stores it in.
   */
  protected addWeight(name: string, shape: number[], init: Initializer, options: { dtype?: DType; trainable?: boolean; fanIn?: number; fanOut?: number } = {}): Variable {
    const dtype = options.dtype ?? "float32";
    weightGuard?.(shape, dtype);
    const v = initScope(() => {
      const value = init(shape, dtype, { fanIn: options.fanIn ?? fanInOf(shape), fanOut: options.fanOut ?? fanOutOf(shape) });
      if (!(value instanceof Tensor) || value.dtype !== dtype || value.shape.length !== shape.length || value.shape.some((d, i) => d !== shape[i])) {
        throw new ValueError(`the initializer of ${name} must return a ${dtype} tensor of shape [${shape.join(", ")}]`, this.typeName);
      }
      return variable(value, { name: `${this.typeName}/${name}`, trainable: options.trainable ?? true });
    });
    this.childCreated(name, v);
    return v;
  }

  /** The tracked attributes: [name, value] for child modules, Variables and containers of them. */
  override *trackedChildren(): Iterable<readonly [string, unknown]> {
    for (const [k, v] of Object.entries(this)) {
      if (MODULE_FIELDS.has(k) || k.startsWith("_")) continue;
      if (holdsState(v)) yield [k, v];
    }
  }

  /** Every Variable under this module with its dotted path, depth-first in attribute order. */
  namedVariables(): [string, Variable][] {
    const out: [string, Variable][] = [];
    const seen = new Set<Variable>();
    walkModule(this, "", (path, v) => {
      if (!seen.has(v)) {
        seen.add(v);
        out.push([path, v]);
      }
    }, () => true);
    return out;
  }

  /** Every Variable under this module (trainable or not: batch-norm statistics included). */
  variables(): Variable[] {
    return this.namedVariables().map(([, v]) => v);
  }

  /** The trainable Variables (of modules whose `trainable` is true) with their dotted paths. */
  namedParameters(): [string, Variable][] {
    const out: [string, Variable][] = [];
    const seen = new Set<Variable>();
    walkModule(this, "", (path, v) => {
      if (v.trainable && !seen.has(v)) {
        seen.add(v);
        out.push([path, v]);
      }
    }, (m) => m.trainable);
    return out;
  }

  /** The trainable Variables, for an optimizer. */
  parameters(): Variable[] {
    return this.namedParameters().map(([, v]) => v);
  }

  /** Child modules with their dotted paths ("" is this module), depth-first. */
  namedModules(): [string, Module][] {
    const out: [string, Module][] = [["", this]];
    const visit = (m: Module, prefix: string) => {
      for (const [k, v] of m.trackedChildren()) {
        forEachLeaf(v, prefix ? `${prefix}.${k}` : k, (path, leaf) => {
          if (leaf instanceof Module) {
            out.push([path, leaf]);
            visit(leaf, path);
          }
        });
      }
    };
    visit(this, "");
    return out;
  }

  /** Sets train mode (or eval mode with `false`) on this module and every child; returns this. */
  train(mode = true): this {
    for (const [, m] of this.namedModules()) m.training = mode;
    return this;
  }

  /** Eval mode: batch norm uses its running statistics, dropout passes inputs through. */
  eval(): this {
    return this.train(false);
  }

  /**
   * The mode of this module and of every child, as a function that puts them back: what
   * `summary`, `evaluate` and `fit` use to leave a model as they found it (a child the user put
   * in eval mode, a frozen batch norm say, stays so).
   */
  saveModes(): () => void {
    const modes = this.namedModules().map(([, m]) => [m, m.training] as const);
    return () => {
      for (const [m, t] of modes) m.training = t;
    };
  }

  /** The number of elements in `parameters()` (or in every variable with `{ all: true }`). */
  parameterCount(options: { all?: boolean } = {}): number {
    checkOptions("Module.parameterCount", options, ["all"]);
    return (options.all ? this.variables() : this.parameters()).reduce((n, v) => n + v.size, 0);
  }

  /**
   * A table of the layers, their output shapes and parameter counts (as Keras's
   * `model.summary()` and torchinfo show), from one eager call on `inputs` (which also builds
   * the model). The model is called in eval mode and put back in its mode after.
   */
  summary(...inputs: unknown[]): string {
    const paths = new Map<Module, string>();
    const calls: { module: Module; path: string; type: string; shape: string }[] = [];
    const restoreModes = this.saveModes();
    this.eval();
    const saved = callObserver;
    callObserver = (m, out) => {
      // (a module reachable by several paths is named by the first)
      if (paths.size === 0) for (const [p, mm] of this.namedModules()) if (!paths.has(mm)) paths.set(mm, p);
      calls.push({ module: m, path: paths.get(m) ?? "?", type: m.typeName, shape: describeOutput(out) });
    };
    try {
      initScope(() => this.call(...inputs));
    } finally {
      callObserver = saved;
      restoreModes();
    }
    // One row per module called (a module called again adds its call count, not a second row).
    const rows: { module: Module; path: string; type: string; shape: string; calls: number; params: number }[] = [];
    for (const c of calls) {
      const row = rows.find((r) => r.module === c.module);
      if (row) row.calls++;
      else rows.push({ ...c, calls: 1, params: 0 });
    }
    // A row counts every variable under its module but those under a descendant with a row of its
    // own: the weights of an LSTM's cell (never called itself: the layer runs its steps) are the
    // LSTM's. Variables under no called module (the root's own, an uncalled child's) go to the
    // root's row. A variable shared by several modules is counted once, so the rows add up to
    // the total.
    const rowOf = new Map(rows.map((r) => [r.module, r] as const));
    const rootRow = rowOf.get(this) ?? { module: this as Module, path: "", type: this.typeName, shape: "", calls: 1, params: 0 };
    if (!rowOf.has(this)) rowOf.set(this, rootRow);
    const counted = new Set<Variable>();
    const assign = (m: Module, owner: (typeof rows)[number]) => {
      for (const [, v] of m.trackedChildren()) {
        forEachLeaf(v, "", (_p, leaf) => {
          if (leaf instanceof Variable) {
            if (!counted.has(leaf)) {
              counted.add(leaf);
              owner.params += leaf.size;
            }
          } else assign(leaf, rowOf.get(leaf) ?? owner);
        });
      }
    };
    assign(this, rootRow);
    const table = rows.filter((r) => r.module !== this).map((r) => ({ ...r, shape: r.calls > 1 ? `${r.shape} (${r.calls} calls)` : r.shape }));
    if (rootRow.params > 0) table.unshift({ ...rootRow, path: "(own)", shape: "" });
    const root = calls.find((c) => c.module === this);
    const header = ["Layer (type)", "Output shape", "Params"];
    const body = table.map((r) => [`${r.path} (${r.type})`, r.shape, r.params.toLocaleString("en-US")]);
    const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
    const line = (cells: string[]) => cells.map((c, i) => (i === 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("   ");
    const rule = "-".repeat(line(header).length);
    const total = this.parameterCount({ all: true });
    const trainable = this.parameterCount();
    return [
      `${this.typeName}${root ? ` -> ${root.shape}` : ""}`,
      rule,
      line(header),
      rule,
      ...body.map(line),
      rule,
      `Total params: ${total.toLocaleString("en-US")} (trainable ${trainable.toLocaleString("en-US")}, non-trainable ${(total - trainable).toLocaleString("en-US")})`,
    ].join("\n");
  }
}

/** Whether `v` is or holds (in arrays, Maps, plain objects) a Module or a Variable. */
function holdsState(v: unknown): boolean {
  if (v instanceof Module || v instanceof Variable) return true;
  if (Array.isArray(v)) return v.some(holdsState);
  if (v instanceof Map) return [...v.values()].some(holdsState);
  if (isPlainObject(v)) return Object.values(v).some(holdsState);
  return false;
}

/** Calls `f` on every Module/Variable leaf of a container, with dotted paths. */
export function forEachLeaf(v: unknown, path: string, f: (path: string, leaf: Module | Variable) => void): void {
  const join = (k: string | number) => (path ? `${path}.${k}` : String(k));
  if (v instanceof Module || v instanceof Variable) f(path, v);
  else if (Array.isArray(v)) v.forEach((x, i) => forEachLeaf(x, join(i), f));
  else if (v instanceof Map) for (const [k, x] of v) forEachLeaf(x, join(String(k)), f);
  else if (isPlainObject(v)) for (const [k, x] of Object.entries(v)) forEachLeaf(x, join(k), f);
}

function walkModule(m: Module, prefix: string, onVariable: (path: string, v: Variable) => void, enter: (m: Module) => boolean): void {
  if (!enter(m)) return;
  for (const [k, v] of m.trackedChildren()) {
    forEachLeaf(v, prefix ? `${prefix}.${k}` : k, (path, leaf) => {
      if (leaf instanceof Variable) onVariable(path, leaf);
      else walkModule(leaf, path, onVariable, enter);
    });
  }
}

function describeOutput(out: unknown): string {
  if (out instanceof Tensor) return `[${out.shape.join(", ")}]`;
  if (Array.isArray(out)) return out.map(describeOutput).join(", ");
  return typeof out;
}

/** Fan-in of a weight: [in, out] -> in; [outC, inC, kH, kW] -> inC * kH * kW. */
export function fanInOf(shape: readonly number[]): number {
  if (shape.length < 2) return shape[0] ?? 1;
  if (shape.length === 2) return shape[0]!;
  return shape.slice(1).reduce((a, b) => a * b, 1);
}

/** Fan-out of a weight: [in, out] -> out; [outC, inC, kH, kW] -> outC * kH * kW. */
export function fanOutOf(shape: readonly number[]): number {
  if (shape.length < 2) return shape[0] ?? 1;
  if (shape.length === 2) return shape[1]!;
  return shape[0]! * shape.slice(2).reduce((a, b) => a * b, 1);
}
