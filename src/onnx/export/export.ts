/**
 * exportFunction: a staged function (or a concrete function) as an ONNX model. The traced graph
 * is walked once: registry ops through their lowerings (elementwise ops from their expressions),
 * staged calls inlined, cond as If, while as Loop, variables read as initializers (named by
 * their module path when a model is given) and variables assigned as extra outputs holding their
 * new values. What ONNX cannot express is refused with OnnxUnsupportedError naming the op and
 * the user's source line. A variable assigned inside a conditional or a loop is one more output of
 * the If, or one more loop-carried value of the Loop.
 */
import type { DType } from "../../core/dtype.js";
import type { Tensor } from "../../core/tensor.js";
import type { Variable } from "../../core/variable.js";
import { checkOptions, optionKeys } from "../../core/options.js";
import { ValueError } from "../../core/errors.js";
import type { FunctionLibrary, Graph, Node, Value } from "../../graph/ir.js";
import { lookupOp, type OpDef } from "../../ops/registry.js";
import { condOp, whileOp, callOp, readVariableOp, assignVariableOp, type WhileAttrs } from "../../ops/structural.js";
import { ConcreteFunction } from "../../staging/concrete-function.js";
import { makeGraph, makeModel, makeValueInfo, modelBytes } from "../builders.js";
import { tensorToProto } from "../tensor-proto.js";
import { OnnxUnsupportedError } from "../errors.js";
import { NameSource, OnnxBuilder } from "./builder.js";
import { lowerElementwise } from "./elementwise.js";
import { installLowerings } from "./lowerings/index.js";
import type { LowerNode } from "./lowering.js";
import { crashFreeLowering } from "./ort-crashes.js";

export const EXPORT_OPSET = 18;
export const EXPORT_IR_VERSION = 8;

export interface ExportOptions {
  /** Names of the graph inputs, in order (default: the specs' names, else the parameters'). */
  inputNames?: string[];
  /** Names of the graph outputs, in order (default: the traced output names). */
  outputNames?: string[];
  /** A model (nn.Module) whose variables are named by their module path ("layers.0.kernel"). */
  model?: { namedVariables(): [string, Variable][] };
  /** The graph's name (default: the function's). */
  name?: string;
}

const EXPORT_OPTIONS = optionKeys<ExportOptions>()("inputNames", "outputNames", "model", "name");

/** A staged function (sc.stage) as exportFunction takes it. */
interface StagedLike {
  concrete(...args: unknown[]): ConcreteFunction;
}

/** What an export produced: the model's bytes and the names it gave things. */
export interface ExportedModel {
  bytes: Uint8Array;
  inputNames: string[];
  outputNames: string[];
  /** Initializers holding variables, by variable: name in the model. */
  variableNames: Map<Variable, string>;
  /** Variables the function assigns, with the output holding each new value. */
  updatedVariables: { variable: Variable; output: string }[];
  /** For the engine: the variables the graph reads, with the model input holding each value. */
  variableInputs: { variable: Variable; input: string }[];
  /** The graph input each of `inputNames` stands for (its index in the graph's inputs). */
  inputIndices: number[];
}

/**
 * The ONNX model (bytes of a ModelProto) of a staged function traced for `specs` (sc.spec, with
 * null dims as symbolic dims, or example tensors), or of a concrete function.
 */
export function exportFunction(fn: StagedLike | ConcreteFunction, ...specs: unknown[]): Uint8Array {
  return exportModel(fn, specs).bytes;
}

/** exportFunction with options, returning the names it gave inputs, outputs and variables too. */
export function exportModel(fn: StagedLike | ConcreteFunction, specs: unknown[], options: ExportOptions = {}): ExportedModel {
  checkOptions("onnx.exportModel", options, EXPORT_OPTIONS);
  installLowerings();
  let cf: ConcreteFunction;
  if (fn instanceof ConcreteFunction) cf = fn;
  else if (fn !== null && typeof fn === "function" && typeof (fn as StagedLike).concrete === "function") cf = (fn as StagedLike).concrete(...specs);
  else throw new ValueError(`expected a staged function (sc.stage) or a concrete function, got ${typeof fn}`, "onnx.exportFunction");
  const specNames = flatSpecNames(specs);
  return new Exporter(cf, options, specNames, () => false).run();
}

/** What the engine bakes into a model: values that are initializers instead of model inputs. */
export interface EngineBaked {
  /** Graph inputs (by index) whose value is this tensor. */
  inputs?: ReadonlyMap<number, Tensor>;
  /** Variables the graph reads (readVariable nodes) whose current values are initializers. */
  variables?: ReadonlySet<Variable>;
}

/**
 * A graph as the onnxruntime engine runs it: every graph input is a model input (`inputIndices`
 * says which), and so is every variable the graph reads (its value at each call), named in
 * `variableInputs`, except the `baked` ones, whose values are initializers.
 */
export function exportGraphForEngine(graph: Graph, library: FunctionLibrary, baked: EngineBaked = {}): ExportedModel {
  installLowerings();
  const variables = baked.variables ?? new Set();
  const source = { graph, library, captures: [], numArgInputs: graph.inputs.length, bakedInputs: baked.inputs, guardsAsTripCounts: true };
  return new Exporter(source, {}, [], (v) => !variables.has(v)).run();
}

/** What the exporter reads of a concrete function. */
interface ExportSource {
  graph: Graph;
  library: FunctionLibrary;
  captures: ConcreteFunction["captures"];
  numArgInputs: number;
  /** (the engine's) Argument inputs whose values are initializers instead of model inputs. */
  bakedInputs?: ReadonlyMap<number, Tensor> | undefined;
  /**
   * (the engine's) A guarded loop's bound (an imported Loop's maxLoopIterations) is written as the
   * Loop's trip count, so onnxruntime stops where our executor does (a model file leaves it out:
   * the bound is Stagecraft's, not the program's). Found by the seam hunt of the "auto" engine.
   */
  guardsAsTripCounts?: boolean;
}

function flatSpecNames(specs: unknown[]): (string | undefined)[] {
  const out: (string | undefined)[] = [];
  const walk = (x: unknown): void => {
    if (Array.isArray(x)) x.forEach(walk);
    else if (x !== null && typeof x === "object" && "dtype" in x && "shape" in x) out.push((x as { name?: string }).name);
    else if (x !== null && typeof x === "object" && Object.getPrototypeOf(x) === Object.prototype) Object.values(x).forEach(walk);
  };
  specs.forEach(walk);
  return out;
}

/** A variable's state while the graph is walked: its initializer, and its newest value. */
interface VariableState {
  variable: Variable;
  initializer: string;
  current: string;
  assigned: boolean;
}

class Exporter {
  private readonly names = new NameSource();
  private readonly initializers: Record<string, unknown>[] = [];
  private readonly variables = new Map<number, VariableState>();
  private readonly modelNames = new Map<number, string>();

  /** (engine mode: variables are read from model inputs) */
  private readonly variableInputs: Record<string, unknown>[] = [];

  constructor(
    private readonly cf: ExportSource,
    private readonly options: ExportOptions,
    private readonly specNames: (string | undefined)[],
    /** Which variables are model inputs rather than initializers (the engine's). */
    private readonly variableAsInput: (v: Variable) => boolean,
  ) {
    for (const [path, v] of options.model?.namedVariables() ?? []) if (!this.modelNames.has(v.variableId)) this.modelNames.set(v.variableId, path);
  }

  run(): ExportedModel {
    const { graph, library, captures, numArgInputs } = this.cf;
    const b = new OnnxBuilder(this.names);
    const env = new Map<Value, string>();
    const inputs: Record<string, unknown>[] = [];
    const inputNames: string[] = [];
    const inputIndices: number[] = [];
    graph.inputs.forEach((v, i) => {
      const bakedValue = this.cf.bakedInputs?.get(i);
      if (bakedValue !== undefined) {
        env.set(v, this.initializer(graph.inputNames[i] ?? `input_${i}`, bakedValue));
        return;
      }
      if (i < numArgInputs) {
        const wanted = this.options.inputNames?.[i] ?? this.specNames[i] ?? graph.inputNames[i] ?? `input_${i}`;
        const name = this.names.fresh(wanted);
        env.set(v, name);
        inputNames.push(name);
        inputIndices.push(i);
        inputs.push(makeValueInfo(name, v.type.dtype, v.type.shape.map((d, k) => (d < 0 ? `${name}_dim${k}` : d))));
        return;
      }
      const c = captures[i - numArgInputs]!;
      env.set(v, c.variable ? this.variable(c.variable).current : this.initializer(graph.inputNames[i] ?? "capture", c.tensor));
    });
    if (this.options.inputNames && this.options.inputNames.length !== numArgInputs) {
      throw new ValueError(`inputNames has ${this.options.inputNames.length} names, but the function has ${numArgInputs} tensor inputs`, "onnx.exportFunction");
    }
    this.lowerGraph(b, graph, library, env, [graph.name]);
    const outputs: Record<string, unknown>[] = [];
    const outputNames: string[] = [];
    graph.outputs.forEach((v, i) => {
      const name = this.names.fresh(this.options.outputNames?.[i] ?? graph.outputNames[i] ?? `output_${i}`);
      b.opTo("Identity", [env.get(v)!], [name]);
      outputNames.push(name);
      outputs.push(makeValueInfo(name, v.type.dtype, v.type.shape.map((d, k) => (d < 0 ? `${name}_dim${k}` : d))));
    });
    const updatedVariables: { variable: Variable; output: string }[] = [];
    for (const s of this.variables.values()) {
      if (!s.assigned) continue;
      const name = this.names.fresh(`${s.initializer}.updated`);
      b.opTo("Identity", [s.current], [name]);
      outputs.push(makeValueInfo(name, s.variable.dtype, [...s.variable.shape]));
      updatedVariables.push({ variable: s.variable, output: name });
    }
    const g = makeGraph(b.nodes, this.options.name ?? graph.name, [...inputs, ...this.variableInputs], outputs);
    // (a variable that is only assigned, never read, needs no initializer)
    const used = usedNames(b.nodes);
    g.initializer = this.initializers.filter((t) => used.has((t as { name: string }).name));
    const bytes = modelBytes(makeModel(g, { opset: EXPORT_OPSET, irVersion: EXPORT_IR_VERSION }));
    const variableNames = new Map<Variable, string>();
    for (const s of this.variables.values()) variableNames.set(s.variable, s.initializer);
    const variableInputs = [...this.variables.values()].filter((s) => this.variableAsInput(s.variable)).map((s) => ({ variable: s.variable, input: s.initializer }));
    return { bytes, inputNames, outputNames, variableNames, updatedVariables, variableInputs, inputIndices };
  }

  private initializer(base: string, value: Tensor): string {
    const name = this.names.fresh(base);
    this.initializers.push(tensorToProto(value, name));
    return name;
  }

  private variable(v: Variable): VariableState {
    let s = this.variables.get(v.variableId);
    if (s === undefined) {
      const base = this.modelNames.get(v.variableId) ?? v.name;
      let name: string;
      if (this.variableAsInput(v)) {
        name = this.names.fresh(base);
        this.variableInputs.push(makeValueInfo(name, v.dtype, [...v.shape]));
      } else name = this.initializer(base, v.storedValue);
      s = { variable: v, initializer: name, current: name, assigned: false };
      this.variables.set(v.variableId, s);
    }
    return s;
  }

  /**
   * Lowers `graph`'s nodes into `b`, with `env` naming its inputs; fills env for every value.
   * `stack` is the chain of functions being inlined (a call back into one is recursion).
   */
  private lowerGraph(b: OnnxBuilder, graph: Graph, library: FunctionLibrary, env: Map<Value, string>, stack: string[]): void {
    for (const node of graph.nodes) {
      b.loc = node.loc;
      b.opName = node.op;
      const ins = node.inputs.map((v) => {
        const n = env.get(v);
        if (n === undefined) throw new Error(`internal: value %${v.id} of ${graph.name} has no ONNX name`);
        return n;
      });
      const outs = this.lowerNode(b, node, ins, library, stack);
      node.outputs.forEach((v, i) => env.set(v, outs[i]!));
    }
  }

  private lowerNode(b: OnnxBuilder, node: Node, ins: string[], library: FunctionLibrary, stack: string[]): string[] {
    const def = lookupOp(node.op);
    if (def === null) return b.unsupported(`it is not a registry op`);
    if (def.structural !== undefined) {
      switch (def) {
        case callOp:
          return this.lowerCall(b, node, ins, library, stack);
        case condOp:
          return this.lowerCond(b, node, ins, library, stack);
        case whileOp:
          return this.lowerWhile(b, node, ins, library, stack);
        case readVariableOp: {
          const v = node.attrs.variable as Variable;
          return [this.variable(v).current];
        }
        case assignVariableOp: {
          const s = this.variable(node.attrs.variable as Variable);
          s.current = ins[0]!;
          s.assigned = true;
          return [];
        }
        default:
          return b.unsupported(`no ONNX form for the structural op`);
      }
    }
    const op = def as OpDef;
    const lowerNode: LowerNode = {
      op: node.op,
      attrs: node.attrs,
      inputTypes: node.inputs.map((v) => v.type),
      outputTypes: node.outputs.map((v) => v.type),
    };
    // (inputs that crash onnxruntime natively are lowered without reaching the crashing kernel)
    const crashFree = crashFreeLowering(lowerNode);
    if (crashFree !== null) return crashFree(b, ins, lowerNode);
    if (op.onnx?.lower) return op.onnx.lower(b, ins, lowerNode);
    if (op.elementwise && !op.onnx?.refused) {
      return [lowerElementwise(b, op.elementwise, node.attrs, ins.map((name, i) => ({ name, dtype: node.inputs[i]!.type.dtype })), node.outputs[0]!.type.dtype)];
    }
    return b.unsupported(op.onnx?.refused ?? "it has no ONNX lowering");
  }

  private lowerCall(b: OnnxBuilder, node: Node, ins: string[], library: FunctionLibrary, stack: string[]): string[] {
    const callee = node.attrs.callee as string;
    if (stack.includes(callee)) {
      throw new OnnxUnsupportedError(
        `cannot export the staged recursive function ${callee}: ONNX has no recursion (its call chain: ${[...stack, callee].join(" -> ")}); write it as a loop (sc.whileLoop or a staged while)`,
        "onnx.export",
        node.loc,
      );
    }
    const g = library.get(callee);
    const env = new Map<Value, string>();
    g.inputs.forEach((v, i) => env.set(v, ins[i]!));
    this.lowerGraph(b, g, library, env, [...stack, callee]);
    return g.outputs.map((v) => env.get(v)!);
  }

  /** A region as an ONNX subgraph: `bind` names its inputs (outer names, or the subgraph's own). */
  private subgraph(
    b: OnnxBuilder,
    region: Graph,
    library: FunctionLibrary,
    stack: string[],
    bind: (env: Map<Value, string>, sub: OnnxBuilder) => void,
    after?: (env: Map<Value, string>, sub: OnnxBuilder, outs: string[]) => string[],
  ): { sub: OnnxBuilder; outputs: string[] } {
    const sub = b.child();
    const env = new Map<Value, string>();
    bind(env, sub);
    this.lowerGraph(sub, region, library, env, stack);
    let outs = region.outputs.map((v) => env.get(v)!);
    if (after) outs = after(env, sub, outs);
    // (subgraph outputs must be made inside the subgraph, under names of their own)
    const named = outs.map((o) => {
      const n = sub.fresh(`${o}_out`);
      sub.opTo("Identity", [o], [n]);
      return n;
    });
    b.loc = sub.loc;
    return { sub, outputs: named };
  }

  /** The variables that nodes of these graphs (their regions and callees too) assign, in order of first assignment. */
  private assignedIn(graphs: Graph[], library: FunctionLibrary, seen = new Set<Graph>()): VariableState[] {
    const out: VariableState[] = [];
    const walk = (g: Graph): void => {
      if (seen.has(g)) return;
      seen.add(g);
      for (const n of g.nodes) {
        if (n.op === assignVariableOp.name) {
          const s = this.variable(n.attrs.variable as Variable);
          if (!out.includes(s)) out.push(s);
        }
        n.regions.forEach(walk);
        if (n.op === callOp.name && library.functions.has(n.attrs.callee as string)) walk(library.get(n.attrs.callee as string));
      }
    };
    graphs.forEach(walk);
    return out;
  }

  private lowerCond(b: OnnxBuilder, node: Node, ins: string[], library: FunctionLibrary, stack: string[]): string[] {
    const [thenR, elseR] = node.regions as [Graph, Graph];
    const loc = node.loc;
    const assigned = this.assignedIn([thenR, elseR], library);
    const before = assigned.map((s) => s.current);
    const branch = (r: Graph, label: string) => {
      assigned.forEach((s, k) => (s.current = before[k]!));
      const { sub, outputs } = this.subgraph(
        b,
        r,
        library,
        stack,
        (env) => r.inputs.forEach((v, i) => env.set(v, ins[1 + i]!)),
        // (each assigned variable's value at the end of the branch is one more output)
        (_env, _s, outs) => [...outs, ...assigned.map((s) => s.current)],
      );
      b.loc = loc;
      b.opName = node.op;
      const dtypes = [...node.outputs.map((v) => v.type.dtype), ...assigned.map((s) => s.variable.dtype)];
      return makeGraph(
        sub.nodes,
        b.fresh(label),
        [],
        outputs.map((n, i) => makeValueInfo(n, dtypes[i]!, null)),
      );
    };
    const thenG = branch(thenR, "then");
    const elseG = branch(elseR, "else");
    // (a conditional with no outputs and no assignments computes nothing a model could return:
    // its branches were lowered only so that what they cannot export is refused)
    const count = node.outputs.length + assigned.length;
    if (count === 0) return [];
    const outs = b.op("If", [ins[0]!], { then_branch: thenG, else_branch: elseG }, count);
    assigned.forEach((s, k) => {
      s.current = outs[node.outputs.length + k]!;
      s.assigned = true;
    });
    return outs.slice(0, node.outputs.length);
  }

  private lowerWhile(b: OnnxBuilder, node: Node, ins: string[], library: FunctionLibrary, stack: string[]): string[] {
    const [condR, bodyR] = node.regions as [Graph, Graph];
    const { numLoopVars, maxIterations, maxIterationsIsGuard } = node.attrs as unknown as WhileAttrs;
    const loc = node.loc;
    const invariants = ins.slice(numLoopVars);
    // the condition on the initial values, in the enclosing graph
    const env0 = new Map<Value, string>();
    condR.inputs.forEach((v, i) => env0.set(v, ins[i]!));
    this.lowerGraph(b, condR, library, env0, stack);
    const cond0 = env0.get(condR.outputs[0]!)!;
    b.loc = loc;
    b.opName = node.op;
    // variables the loop assigns are carried by it too
    const assigned = this.assignedIn([condR, bodyR], library);
    const initial = assigned.map((s) => s.current);
    const iterName = b.fresh("iter");
    const condIn = b.fresh("cond_in");
    const carried = Array.from({ length: numLoopVars + assigned.length }, () => b.fresh("carried"));
    const { sub, outputs } = this.subgraph(
      b,
      bodyR,
      library,
      stack,
      (env) => {
        bodyR.inputs.forEach((v, i) => env.set(v, i < numLoopVars ? carried[i]! : invariants[i - numLoopVars]!));
        assigned.forEach((s, k) => (s.current = carried[numLoopVars + k]!));
      },
      (_env, s, outs) => {
        // the condition on the new values, inside the body
        const envC = new Map<Value, string>();
        condR.inputs.forEach((v, i) => envC.set(v, i < numLoopVars ? outs[i]! : invariants[i - numLoopVars]!));
        this.lowerGraph(s, condR, library, envC, stack);
        return [envC.get(condR.outputs[0]!)!, ...outs, ...assigned.map((st) => st.current)];
      },
    );
    b.loc = loc;
    b.opName = node.op;
    const dtypes = [...node.inputs.slice(0, numLoopVars).map((v) => v.type.dtype), ...assigned.map((s) => s.variable.dtype)];
    const body = makeGraph(
      sub.nodes,
      b.fresh("body"),
      [makeValueInfo(iterName, "int64", []), makeValueInfo(condIn, "bool", []), ...carried.map((n, i) => makeValueInfo(n, dtypes[i]!, null))],
      [makeValueInfo(outputs[0]!, "bool", []), ...outputs.slice(1).map((n, i) => makeValueInfo(n, dtypes[i]!, null))],
    );
    // (a guard's limit is Stagecraft's, not the program's: the model's loop has no such count)
    const trip = maxIterations !== undefined && Number.isFinite(maxIterations) && (!maxIterationsIsGuard || this.cf.guardsAsTripCounts === true) ? b.constant([maxIterations], "int64", []) : "";
    if (carried.length === 0) {
      // (nothing is carried: the loop computes nothing a model could return)
      return [];
    }
    const outs = b.op("Loop", [trip, cond0, ...ins.slice(0, numLoopVars), ...initial], { body }, carried.length);
    assigned.forEach((s, k) => {
      s.current = outs[numLoopVars + k]!;
      s.assigned = true;
    });
    return outs.slice(0, numLoopVars);
  }
}

/** The value names nodes read, in subgraphs too. */
function usedNames(nodes: Record<string, unknown>[], out = new Set<string>()): Set<string> {
  for (const n of nodes) {
    for (const i of n.input as string[]) out.add(i);
    for (const a of n.attribute as { g?: { node: Record<string, unknown>[] } }[]) if (a.g) usedNames(a.g.node, out);
  }
  return out;
}

export type { DType };
