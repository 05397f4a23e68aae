/**
 * Code generation for a planned graph (analysis.ts): JavaScript source per node, by its
 * strategy, cut into segments of bounded size so V8 optimizes each of them, assembled into a
 * factory of instances (each with its own arena, arena.ts) that the CompiledGraph runs.
 *
 * Values a node defines are locals; a value used in a later segment than the one defining it
 * lives in the instance array V. Values passed to generated code (ops, constants, compiled
 * callees) are parameters of the factory ("bound constants").
 */
import { config } from "../../core/config.js";
import { storageCtor, type TypedArray } from "../../core/dtype.js";
import { executing } from "../../core/errors.js";
import { sizeOf } from "../../core/shape.js";
import { Tensor } from "../../core/tensor.js";
import type { FunctionLibrary, Node } from "../../graph/ir.js";
import { getOp } from "../../ops/registry.js";
import { SCALAR_PRELUDE } from "../../backends/cpu/js-expr.js";
import { elementwiseSource, matmulSource, reduceSource, type LoopInput, type LoopOutput } from "../../backends/cpu/js-loops.js";
import { typesEqual, type Plan, type Strategy, type ValueInfo } from "./analysis.js";
import { bslotKey, laidOutB, layoutArena, splitGemm, type Arena } from "./arena.js";
import { isStack, leavingStorage, leavingTensor, reusedStorage, runtimeShape, type CompiledGraph, type RawFn } from "./graph.js";
import { loopKernel } from "./loop-kernels.js";

/**
 * Size of a generated segment: V8 does not optimize functions past ~60 KB of bytecode, and
 * smaller functions get optimized sooner.
 */
const SEGMENT_CHARS = config.segmentChars;
const SEGMENT_NODES = 64;
/**
 * Generated code past which loops are functions rather than inline (loop-kernels.ts): by
 * default four segments' worth, which V8 optimizes within tens of calls (L2HMC's 34 took ~90).
 */
const LOOP_FUNCTIONS_CHARS = config.loopFunctionsChars;
/** Element steps per call up to which a loop function takes all its arrays as arguments and is shared (loop-kernels.ts). */
const SHARED_LOOP_WORK = config.sharedLoopWork;
/** The k-block size of the WebAssembly sgemm (wasm/sgemm.ts KC). */
const SGEMM_KC = 256;
/** Constants one generated function binds at most (they are parameters of its factory). */
const MAX_CONSTANTS = 30000;

/** A graph too large for one generated function (it is interpreted instead). */
export class TooLargeError extends Error {}

/** The generic path for one node (shape rule + kernel, structural ops with regions compiled per shape). */
export type RunDynamic = (node: Node, args: Tensor[], library: FunctionLibrary) => Tensor[];

/** dst (k x n, rows `ld` apart) = the transpose of src (n x k, row-major). */
function transposeInto(dst: Float32Array, src: TypedArray, n: number, k: number, ld: number): void {
  for (let j = 0; j < n; j++) {
    const row = j * k;
    for (let p = 0; p < k; p++) dst[p * ld + j] = src[row + p]!;
  }
}

/** dst (k x n, rows `ld` apart) = src (k x n, row-major): B rows padded for the gemm. */
function padRowsInto(dst: Float32Array, src: TypedArray, n: number, k: number, ld: number): void {
  for (let p = 0; p < k; p++) {
    const s = p * n,
      d = p * ld;
    for (let j = 0; j < n; j++) dst[d + j] = src[s + j]!;
  }
}

/** dst (m x n, row-major) = the first n columns of src (m x ld, row-major): a padded product's result. */
function unpadRowsInto(dst: TypedArray, src: Float32Array, m: number, n: number, ld: number): void {
  for (let i = 0; i < m; i++) {
    const s = i * ld,
      d = i * n;
    for (let j = 0; j < n; j++) dst[d + j] = src[s + j]!;
  }
}

/** Generates the code of `plan` and installs it in `c`. */
export function generate(c: CompiledGraph, plan: Plan, runDynamic: RunDynamic): void {
  // Loops inline in their segments are fastest once optimized, and a small graph is optimized
  // soon; a large one is cut into loop functions, which V8 optimizes within a few calls
  // (loop-kernels.ts).
  const inline = new Codegen(c, plan, runDynamic, false);
  inline.emitNodes();
  if (inline.codeChars() <= LOOP_FUNCTIONS_CHARS) return inline.assemble();
  const cut = new Codegen(c, plan, runDynamic, true);
  cut.emitNodes();
  cut.assemble();
}

class Codegen {
  private readonly constNames: string[] = [];
  private readonly constValues: unknown[] = [];
  private readonly arena: Arena;
  /** Instance declarations: the arena's, then handles and constant copies nodes need. */
  private readonly setup: string[];
  private readonly nodeCode: string[][];
  private readonly nodeUses: Set<ValueInfo>[];
  /** The node whose code is being generated (nodes.length: the results). */
  private current = 0;
  private stackTemps = 0;
  private readonly tensorClass: string;
  /** Sources of the shared loops this graph calls (loop-kernels.ts), for `source`. */
  private readonly loopSources = new Set<string>();
  /** Values that are the same array on every call of an instance (a planned buffer, a constant): its name. */
  private readonly fixedArrays = new Map<ValueInfo, string>();
  /** Names of the instance's fixed arrays: its planned buffers and bound typed-array constants. */
  private readonly fixedNames = new Set<string>();
  /** The instance's loop functions (loopCall), and their names by loop, fixed arrays and argument dtypes. */
  private readonly nodeFns: string[] = [];
  private readonly nodeFnNames = new Map<string, string>();

  constructor(
    private readonly c: CompiledGraph,
    private readonly plan: Plan,
    private readonly runDynamic: RunDynamic,
    /** Loops as functions (loopCall) rather than inline. */
    private readonly loopFunctions: boolean,
  ) {
    this.arena = layoutArena(plan, (v, hint) => this.konst(v, hint));
    for (const b of this.arena.bufNames) this.fixedNames.add(b);
    this.setup = this.arena.setup.slice();
    this.nodeCode = plan.nodes.map(() => []);
    this.nodeUses = plan.nodes.map(() => new Set());
    this.tensorClass = this.konst(Tensor, "Tensor");
  }

  /** The name of a value the generated code is given (objects are bound once). */
  private konst(value: unknown, hint = "K"): string {
    const i = this.constValues.indexOf(value);
    if (i >= 0 && (typeof value === "function" || (typeof value === "object" && value !== null))) return this.constNames[i]!;
    const name = `${hint}${this.constNames.length}`;
    if (ArrayBuffer.isView(value)) this.fixedNames.add(name);
    this.constNames.push(name);
    this.constValues.push(value);
    return name;
  }

  private use(info: ValueInfo): string {
    this.nodeUses[this.current]!.add(info);
    return info.name;
  }

  private define(info: ValueInfo, expr: string): void {
    this.nodeCode[this.current]!.push(`const ${info.name} = ${expr};`);
    if (this.fixedNames.has(expr)) this.fixedArrays.set(info, expr);
  }

  /** Storage leaving the function must not be this instance's arena. */
  private fresh(info: ValueInfo): string {
    const x = this.use(info);
    if (info.type === null || info.roots.size === 0) return x;
    return `(${x}.buffer === ARENA ? ${x}.slice() : ${x})`;
  }

  /**
   * A value as a Tensor for a kernel or the generic path; where the value `leaves` the call
   * (a variable, a stateful kernel, the generic path may keep it), stack-scope storage is
   * copied too (ops/stack-storage.ts: it is reused once the call returns).
   */
  private tensorOf(info: ValueInfo, leaves: boolean): string {
    if (info.type === null) return leaves ? `${this.konst(leavingTensor, "leavingTensor")}(${this.use(info)})` : this.use(info);
    const storage = leaves ? `${this.konst(leavingStorage, "leavingStorage")}(${this.fresh(info)})` : this.fresh(info);
    if (isStack(info.type)) {
      const x = `X${this.current}_${this.stackTemps++}`;
      this.nodeCode[this.current]!.push(`const ${x} = ${storage};`);
      return `new ${this.tensorClass}(${x}, ${this.konst(runtimeShape, "runtimeShape")}(${this.konst(info.type, "T")}, ${x}), ${JSON.stringify(info.type.dtype)}, dev)`;
    }
    return `new ${this.tensorClass}(${storage}, ${this.konst(Object.freeze(info.type.shape.slice()), "S")}, ${JSON.stringify(info.type.dtype)}, dev)`;
  }

  /**
   * What a slot remembers as the storage it last copied (the copy is skipped while the same
   * storage comes back): null for storage reused with other contents (graph.ts reusedStorage:
   * a caller's planned buffer passed in, as a loop's invariant), so it is copied every time.
   */
  private keptSource(src: string): string {
    return `(${this.konst(reusedStorage, "reusedStorage")}(${src}) ? null : ${src})`;
  }

  /** Copies an operand of a WebAssembly node into its slot (planned buffers are in place). */
  private copyIn(x: ValueInfo, k: number, out: string[]): void {
    if (x.buffer >= 0) return;
    const sl = this.arena.slots.get(x)!;
    if (sl.constant) {
      const copy = `${sl.name}.set(${this.konst(this.arena.constData.get(x)!, "C")});`;
      if (!this.setup.includes(copy)) this.setup.push(copy);
    } else {
      const src = this.use(x);
      // (storage that may be a view of this instance's buffers changes in place: always copied)
      const copy = x.roots.size > 0 ? `${sl.name}.set(${src});` : `if (${sl.name}src !== ${src}) { ${sl.name}.set(${src}); ${sl.name}src = ${this.keptSource(src)}; }`;
      if (sl.firstUse === k && !out.includes(copy)) out.push(copy);
    }
  }

  /**
   * A call of the loop whose block `body` (js-loops.ts source over $0..$n-1) runs on `arrays`
   * (an empty body: nothing to compute). The loop is a function of the instance, shared by
   * every node with the same loop on the same fixed arrays (planned buffers, constants: named
   * in it, so V8 folds their addresses and lengths), taking the other arrays as arguments;
   * a loop on no fixed array, or a small one (`work`, its element steps per call, at most
   * SHARED_LOOP_WORK), takes them all as arguments and is shared by every graph
   * (loop-kernels.ts: a small loop named after its node's buffers is a function run once per
   * graph call, which V8 optimizes only after hundreds of calls). Why functions and not inline
   * loops: loop-kernels.ts.
   */
  private loopCall(kind: string, body: string, arrays: ValueInfo[], work: number, out: string[]): void {
    if (body === "") return;
    if (!this.loopFunctions) {
      out.push(`{ ${arrays.map((x, i) => `const $${i} = ${this.use(x)};`).join(" ")}\n${body}\n}`);
      return;
    }
    // (a small loop names no fixed array: shared, it warms up in a few calls; see loop-kernels.ts)
    const small = work <= SHARED_LOOP_WORK;
    const params: string[] = [],
      args: string[] = [],
      fixed: string[] = [];
    arrays.forEach((x, i) => {
      const f = small ? undefined : this.fixedArrays.get(x);
      if (f) fixed.push(`const $${i} = ${f};`);
      else {
        params.push(`$${i}`);
        args.push(this.use(x));
      }
    });
    if (fixed.length === 0) {
      const k = loopKernel(kind, body, arrays.map((x) => x.type!.dtype));
      this.loopSources.add(k.source);
      out.push(`${this.konst(k.fn, "L")}(${args.join(", ")});`);
      return;
    }
    // (the dtypes of the arguments are part of the key: one typed-array kind per parameter)
    const text = `(${params.join(", ")}) { ${fixed.join(" ")}\n${body}\n}`;
    const key = `${params.map((p) => arrays[Number(p.slice(1))]!.type!.dtype).join(",")}|${text}`;
    let name = this.nodeFnNames.get(key);
    if (!name) {
      name = `${kind}_n${this.current}`;
      this.nodeFnNames.set(key, name);
      this.nodeFns.push(`function ${name}${text}`);
    }
    out.push(`${name}(${args.join(", ")});`);
  }

  /** Where an inline node writes a value: its planned buffer, or new storage. */
  private target(info: ValueInfo): string {
    if (info.buffer >= 0) return this.arena.bufNames[info.buffer]!;
    return `new ${storageCtor(info.type!.dtype).name}(${sizeOf(info.type!.shape)})`;
  }

  /** Characters of the nodes' code. */
  codeChars(): number {
    return this.nodeCode.reduce((a, lines) => lines.reduce((b, l) => b + l.length + 1, a), 0);
  }

  /** Generates the code of every node (then assemble). */
  emitNodes(): void {
    const { nodes, strategies, infos } = this.plan;
    nodes.forEach((node, k) => {
      this.current = k;
      this.node(
        node,
        k,
        strategies[k]!,
        node.inputs.map((v) => infos.get(v)!),
        node.outputs.map((v) => infos.get(v)!),
      );
    });
  }

  /** Cuts the nodes' code into segments, assembles the instance factory and installs it. */
  assemble(): void {
    // the outputs (read after the last segment)
    this.current = this.plan.nodes.length;
    this.nodeUses.push(new Set());
    const results = this.plan.outInfos.map((o) => (o.type === null ? this.use(o) : this.fresh(o)));
    this.assembleSegments(results);
  }

  /** The code of node k. */
  private node(node: Node, k: number, s: Strategy, ins: ValueInfo[], outs: ValueInfo[]): void {
    const out = this.nodeCode[k]!;
    switch (s.kind) {
      case "alias":
        this.define(outs[0]!, this.use(ins[0]!));
        break;
      case "const":
        outs.forEach((o, i) => this.define(o, this.konst(s.data[i]!, "C")));
        break;
      case "read":
        this.define(outs[0]!, `${this.konst(node.attrs.variable, "Var")}.storedValue.concrete()`);
        break;
      case "assign":
        out.push(`${this.konst(node.attrs.variable, "Var")}.setStoredValue(${this.tensorOf(ins[0]!, true)});`);
        break;
      case "loop": {
        for (const o of outs) this.define(o, this.target(o));
        const loopIns: LoopInput[] = ins.map((x, i) => ({ array: `$${i}`, shape: x.type!.shape }));
        const loopOuts: LoopOutput[] = outs.map((o, i) => ({ array: `$${ins.length + i}`, value: ins.length + s.group.outputs[i]! }));
        const work = sizeOf(outs[0]!.type!.shape) * Math.max(1, s.group.steps.length);
        this.loopCall("ew", elementwiseSource("", outs[0]!.type!.shape, loopIns, s.group.steps, loopOuts), [...ins, ...outs], work, out);
        break;
      }
      case "matmul": {
        const o = outs[0]!;
        const [a, b] = ins as [ValueInfo, ValueInfo];
        const m = o.type!.shape[0]!,
          n = o.type!.shape[1]!;
        const kk = s.transA ? a.type!.shape[0]! : a.type!.shape[1]!;
        this.define(o, this.target(o));
        this.loopCall("mm", matmulSource("", "$0", "$1", "$2", o.type!.dtype as "float32" | "float64", m, kk, n, s.transA, s.transB, s.arith), [a, b, o], m * kk * n, out);
        break;
      }
      case "simd": {
        for (const x of ins) this.copyIn(x, k, out);
        out.push(`E${k}();`);
        outs.forEach((o, i) => {
          const sc = this.arena.scratch.get(`${k}:${i}`);
          this.define(o, sc ? `${sc.name}.slice()` : this.arena.bufNames[o.buffer]!);
        });
        break;
      }
      case "wasmMatmul":
        this.wasmMatmul(k, s, ins, outs[0]!, out);
        break;
      case "reduce": {
        const o = outs[0]!;
        this.define(o, this.target(o));
        this.loopCall("red", reduceSource("", s.form, "$0", "$1", o.type!.dtype, s.outer, s.red, s.inner), [ins[0]!, o], s.outer * s.red * s.inner, out);
        break;
      }
      case "kernel": {
        const r = this.kernel(node, k, s, ins, out);
        outs.forEach((o, i) => this.define(o, `${r}[${i}]`));
        break;
      }
      case "rowSlice": {
        // a view of the rows when they lie in the input; the kernel otherwise (its error)
        const [x] = ins as [ValueInfo];
        const first = `F${k}`;
        out.push(`const ${first} = ${s.start}${s.offset ? ` + ${this.use(s.offset)}[0]` : ""};`);
        out.push(`let G${k};`);
        out.push(`if (${first} >= 0 && ${first} <= ${s.n - s.rows}) G${k} = ${this.use(x)}.subarray(${first} * ${s.inner}, (${first} + ${s.rows}) * ${s.inner});`);
        out.push(`else {`);
        const r = this.kernel(node, k, { kind: "kernel", def: s.def, escapesInputs: false }, ins, out);
        out.push(`G${k} = ${r}[0]; }`);
        this.define(outs[0]!, `G${k}`);
        break;
      }
      case "callGraph":
      case "branch": {
        const regionIns = s.kind === "branch" ? ins.slice(1) : ins;
        const arr = `[${regionIns.map((x) => this.use(x)).join(", ")}]`;
        const tensors = outs.some((o) => o.type === null);
        // (a call counts toward the nesting limit of calls, exec/call-depth.ts; a branch does not)
        const method = s.kind === "callGraph" ? (tensors ? "callTensors" : "call") : tensors ? "rawTensors" : "raw";
        const callee =
          s.kind === "callGraph" ? this.konst(s.callee, "Fn") : `(${this.use(ins[0]!)}[0] !== 0 ? ${this.konst(s.then, "Then")} : ${this.konst(s.else, "Else")})`;
        out.push(`const R${k} = ${callee}.${method}(${arr}, dev);`);
        outs.forEach((o, i) => this.define(o, `R${k}[${i}]`));
        break;
      }
      case "loopGraph": {
        const n = node.attrs.numLoopVars as number;
        const max = (node.attrs.maxIterations as number | undefined) ?? Infinity;
        const condF = this.konst(s.cond, "Cond");
        const bodyF = this.konst(s.body, "Body");
        const vars = ins.slice(0, n).map((x, i) => {
          out.push(`let L${k}_${i} = ${this.use(x)};`);
          return `L${k}_${i}`;
        });
        const inv = ins.slice(n).map((x) => this.use(x));
        const all = `[${[...vars, ...inv].join(", ")}]`;
        out.push(`for (let it = 0; it < ${Number.isFinite(max) ? max : "Infinity"}; it++) {`);
        out.push(`  if (${condF}.raw(${all}, dev)[0][0] === 0) break;`);
        out.push(`  const r = ${bodyF}.raw(${all}, dev);`);
        vars.forEach((v, i) => out.push(`  ${v} = r[${i}];`));
        out.push(`}`);
        outs.forEach((o, i) => this.define(o, vars[i]!));
        break;
      }
      case "runtime": {
        const nodeK = this.konst(node, "Node");
        const lib = this.konst(this.plan.library, "Lib");
        const dyn = this.konst(this.runDynamic, "runDynamic");
        // (stack ops work on stack-scope storage in place; a stateful op may keep its inputs; an
        // input the kernel copies at once, as a pushed row, may stay a view of this instance's buffers)
        const def = getOp(node.op);
        const stateful = def.stateful === true;
        const args = ins.map((x, i) =>
          def.copiesInputs?.includes(i) && x.type !== null && !isStack(x.type)
            ? `new ${this.tensorClass}(${this.use(x)}, ${this.konst(Object.freeze(x.type.shape.slice()), "S")}, ${JSON.stringify(x.type.dtype)}, dev)`
            : this.tensorOf(x, stateful),
        );
        out.push(`const R${k} = ${dyn}(${nodeK}, [${args.join(", ")}], ${lib});`);
        outs.forEach((o, i) => this.define(o, `R${k}[${i}].concrete()`));
        break;
      }
      case "dynamic": {
        const nodeK = this.konst(node, "Node");
        const lib = this.konst(this.plan.library, "Lib");
        const dyn = this.konst(this.runDynamic, "runDynamic");
        out.push(`const R${k} = ${dyn}(${nodeK}, [${ins.map((x) => this.tensorOf(x, true)).join(", ")}], ${lib});`);
        outs.forEach((o, i) => this.define(o, `R${k}[${i}]`));
        break;
      }
    }
  }

  /** A product by the executor's WebAssembly gemm, in blocks of SGEMM_KC along k, on arena addresses. */
  private wasmMatmul(k: number, s: Extract<Strategy, { kind: "wasmMatmul" }>, ins: ValueInfo[], o: ValueInfo, out: string[]): void {
    const { arena } = this;
    const [a, b] = ins as [ValueInfo, ValueInfo];
    const offsetOf = (x: ValueInfo): string => {
      const res = arena.resident.get(x);
      if (!res) {
        this.copyIn(x, k, out);
        return String(arena.operandAt(x));
      }
      // rows of a source kept in the arena (resident.ts): placed once per call, at the first use
      if (arena.slots.get(x)!.firstUse === k) out.push(`${res.name}.place(${this.use(res.source)}, ${this.use(x)});`);
      return `${res.name}.address`;
    };
    // B transposed and/or its rows padded into its slot (analysis.ts paddedColumns)
    const laidOutOffsetOf = (x: ValueInfo): number => {
      const sl = arena.bslots.get(bslotKey(x, s))!;
      const t = s.transB ? this.konst(transposeInto, "transposeInto") : this.konst(padRowsInto, "padRowsInto");
      if (sl.constant) {
        const copy = `${t}(${sl.name}, ${this.konst(arena.constData.get(x)!, "C")}, ${s.n}, ${s.k}, ${s.ldb});`;
        if (!this.setup.includes(copy)) this.setup.push(copy);
      } else {
        const src = x.buffer >= 0 ? arena.bufNames[x.buffer]! : this.use(x);
        // (planned buffers and views of them change in place: always laid out again)
        const copy =
          x.buffer >= 0 || x.roots.size > 0
            ? `${t}(${sl.name}, ${src}, ${s.n}, ${s.k}, ${s.ldb});`
            : `if (${sl.name}src !== ${src}) { ${t}(${sl.name}, ${src}, ${s.n}, ${s.k}, ${s.ldb}); ${sl.name}src = ${this.keptSource(src)}; }`;
        if ((sl.firstUse === k || x.buffer >= 0 || x.roots.size > 0) && !out.includes(copy)) out.push(copy);
      }
      return sl.at;
    };
    const aAt = offsetOf(a),
      bAt = laidOutB(s) ? String(laidOutOffsetOf(b)) : offsetOf(b);
    const sc = arena.scratch.get(`${k}:0`);
    const cAt = arena.resultAt(k, 0);
    const sai = s.transA ? 1 : s.k,
      sap = s.transA ? s.m : 1;
    for (let p0 = 0; p0 < s.k; p0 += SGEMM_KC) {
      const kk = Math.min(SGEMM_KC, s.k - p0);
      const plus = (at: string, bytes: number) => (/^\d+$/.test(at) ? String(Number(at) + bytes) : bytes === 0 ? at : `${at} + ${bytes}`);
      out.push(`${splitGemm(s) ? "PGEMM" : "GEMM"}(${plus(aAt, p0 * sap * 4)}, ${plus(bAt, p0 * s.ldb * 4)}, ${cAt}, ${s.m}, ${s.ldb}, ${kk}, ${sai}, ${sap}, ${p0 > 0 ? 1 : 0});`);
    }
    if (s.ldb !== s.n) {
      // computed padded: the first n columns of each row, into the value's buffer or new storage
      this.define(o, this.target(o));
      out.push(`${this.konst(unpadRowsInto, "unpadRowsInto")}(${o.name}, ${sc!.name}, ${s.m}, ${s.n}, ${s.ldb});`);
      return;
    }
    this.define(o, sc ? `${sc.name}.slice()` : arena.bufNames[o.buffer]!);
  }

  /** A call of the op's CPU kernel, bound ahead with its output types. */
  /** (returns the name of the array of the kernel's results) */
  private kernel(node: Node, k: number, s: Extract<Strategy, { kind: "kernel" }>, ins: ValueInfo[], out: string[]): string {
    const def = this.konst(s.def, "Op");
    const attrs = this.konst(node.attrs, "Attr");
    const outTypes = this.konst(
      node.outputs.map((v) => this.plan.infos.get(v)!).map((o) => ({ dtype: o.type!.dtype, shape: Object.freeze(o.type!.shape.slice()) })),
      "OT",
    );
    let args: string;
    if (s.escapesInputs) {
      args = `[${ins.map((x) => this.tensorOf(x, true)).join(", ")}]`;
    } else {
      // handles made once per instance; only their storage changes per call
      const hs = ins.map((x, i) => {
        const h = `H${k}_${i}`;
        this.setup.push(`const ${h} = new ${this.tensorClass}(null, ${this.konst(Object.freeze(x.type!.shape.slice()), "S")}, ${JSON.stringify(x.type!.dtype)}, "cpu:0");`);
        out.push(`${h}._data = ${this.use(x)};`);
        return h;
      });
      this.setup.push(`const IN${k} = [${hs.join(", ")}];`);
      args = `IN${k}`;
    }
    // (the node's location names a kernel error; reset after, so nothing else inherits it)
    const ex = this.konst(executing, "EX");
    out.push(`${ex}.at = ${this.konst(node.loc, "Loc")}; const R${k} = ${def}.kernels.cpu(${args}, ${attrs}, ${outTypes}); ${ex}.at = null;`);
    return `R${k}`;
  }

  private assembleSegments(results: string[]): void {
    const { nodes, infos, outInfos, graph } = this.plan;
    const { nodeCode, nodeUses } = this;
    const segOfNode: number[] = [];
    let segIndex = 0,
      chars = 0,
      count = 0;
    nodes.forEach((_, k) => {
      const size = nodeCode[k]!.reduce((a, l) => a + l.length + 1, 0);
      if (count > 0 && (chars + size > SEGMENT_CHARS || count >= SEGMENT_NODES)) {
        segIndex++;
        chars = 0;
        count = 0;
      }
      segOfNode.push(segIndex);
      chars += size;
      count++;
    });
    const numSegs = nodes.length === 0 ? 0 : segIndex + 1;
    segOfNode.push(numSegs); // the results
    const defSeg = (info: ValueInfo) => (info.def < 0 ? -1 : segOfNode[info.def]!);
    const slot = new Map<ValueInfo, number>();
    for (const info of infos.values()) if (info.def < 0) slot.set(info, slot.size); // graph inputs arrive in V
    nodeUses.forEach((uses, k) => {
      for (const x of uses) if (defSeg(x) !== segOfNode[k] && !slot.has(x)) slot.set(x, slot.size);
    });
    const segments: string[][] = Array.from({ length: numSegs + 1 }, () => []);
    const loaded: Set<ValueInfo>[] = segments.map(() => new Set());
    nodeUses.forEach((uses, k) => {
      const sg = segOfNode[k]!;
      for (const x of uses) {
        if (defSeg(x) === sg || loaded[sg]!.has(x)) continue;
        loaded[sg]!.add(x);
        segments[sg]!.push(`const ${x.name} = V[${slot.get(x)}];`);
      }
    });
    nodes.forEach((node, k) => {
      const lines = segments[segOfNode[k]!]!;
      lines.push(`// ${node.op}`, ...nodeCode[k]!);
      for (const v of node.outputs) {
        const info = infos.get(v)!;
        if (slot.has(info)) lines.push(`V[${slot.get(info)}] = ${info.name};`);
      }
    });
    const inputLoads = graph.inputs.map((v, i) => `V[${slot.get(infos.get(v)!)}] = ins[${i}];`);
    const segFns = segments
      .slice(0, numSegs)
      .map((lines, i) => `function seg${i}(dev) {\n${lines.join("\n")}\n}`)
      .join("\n");
    const body = `"use strict";
${SCALAR_PRELUDE}
return function makeInstance() {
${this.setup.join("\n")}
const V = new Array(${Math.max(1, slot.size)}).fill(null);
${this.nodeFns.join("\n")}
${segFns}
return function run(ins, dev) {
${inputLoads.join("\n")}
${segments
  .slice(0, numSegs)
  .map((_, i) => `seg${i}(dev);`)
  .join("\n")}
${segments[numSegs]!.join("\n")}
const OUT = [${results.join(", ")}];
${slot.size > 0 ? "V.fill(null);" : ""}
return OUT;
};
};`;
    if (this.constNames.length > MAX_CONSTANTS) throw new TooLargeError(`graph ${graph.name} needs ${this.constNames.length} bound constants`);
    const make = new Function(...this.constNames, body)(...this.constValues) as () => RawFn;
    const outs = outInfos.map((o) => (o.type ? { dtype: o.type.dtype, shape: o.type.shape.slice() } : null));
    if (this.c.assumedOuts) {
      const assumed = this.c.assumedOuts;
      const ok = assumed.every((a, i) => a === null || (outs[i] !== null && typesEqual(a, outs[i]!)));
      if (!ok) throw new Error(`internal: recursive function ${graph.name} compiled to other output types than its callers assumed`);
      // A caller that assumed a dynamic output receives Tensors through rawTensors; a static
      // assumption requires a static output, checked above.
    }
    // (the shared loops it calls are part of what it runs: shown after it)
    this.c.finish(outs, [body, ...this.loopSources].join("\n"), make);
  }
}
