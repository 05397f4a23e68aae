/**
 * Conformance of cases whose outputs are random draws (Bernoulli, training-mode Dropout, the
 * Random* ops). Their stored expected outputs are one draw of the reference's generator (numpy's
 * or onnxruntime's), which no other generator reproduces, so comparing values would test the
 * generator, not the op. Such a case is "checked without values": each output must have the
 * expected dtype and shape exactly, and satisfy what the op's specification fixes of a draw
 * (RANDOM_CONTRACTS: a uniform draw lies in [low, high), a Bernoulli output is 0 or 1, a dropout
 * output is the input times a boolean mask times 1 / (1 - ratio), ...). The runner counts these
 * apart from the cases that pass by value.
 *
 * Which cases draw is read from the program that ran, not from op names: a case is random when
 * its traced function holds a random op of the registry, so a Dropout in inference mode or with
 * ratio 0 (an exact identity, drawing nothing) is compared by value as any other case.
 */
import { makeTensor, Tensor } from "../core/tensor.js";
import type { Graph, FunctionLibrary } from "../graph/ir.js";
import { lookupOp } from "../ops/registry.js";
import { KEY_OPS } from "../ops/random-keys.js";
import { allGraphs } from "../graph/passes/util.js";
import type { GraphProto, NodeProto } from "./protobuf.js";
import { has } from "./protobuf.js";
import { readTensorProto } from "./tensor-proto.js";
import { floatMatches, mismatch, typeMismatch, type Tolerance } from "./compare.js";
import type { ModelValue } from "./import/load.js";

/** The registry's random draws (family "random", key ops aside) a traced program holds, in its regions and called functions too. */
export function randomOpsIn(graph: Graph, library: FunctionLibrary): string[] {
  const found = new Set<string>();
  for (const g of allGraphs(graph, library)) {
    for (const node of g.nodes) if (lookupOp(node.op)?.family === "random" && !KEY_OPS.has(node.op)) found.add(node.op);
  }
  return [...found].sort();
}

/** What a contract sees of one test data set. */
export interface RandomCaseData {
  graph: GraphProto;
  /** The case's inputs by graph input name (as the model ran on them). */
  feeds: Readonly<Record<string, ModelValue>>;
  /** The model's outputs in the graph's order, each of its expected value's dtype and shape (sequences of them for sequences). */
  outputs: readonly ModelValue[];
  /** The tolerance of the case (the runner's, with REFERENCE_TOLERANCE's override) for values a contract computes. */
  tolerance: Tolerance;
}

export interface RandomContract {
  /** What the check verifies, for the report. */
  readonly what: string;
  /** null when the outputs satisfy the contract, else why not. */
  check(data: RandomCaseData): string | null;
}

/** The first node of one of these op types (the op under test). */
function nodeOf(graph: GraphProto, ...types: string[]): NodeProto | undefined {
  return graph.node.find((n) => types.includes(n.op_type));
}

function floatAttr(node: NodeProto | undefined, name: string, def: number): number {
  const a = node?.attribute.find((x) => x.name === name);
  return a !== undefined && has(a, "f") ? a.f : def;
}

/** A node input's value: a case input, or an initializer; null when it is omitted or computed (or not a tensor). */
function valueOf(data: RandomCaseData, name: string | undefined): Tensor | null {
  if (name === undefined || name === "") return null;
  if (Object.hasOwn(data.feeds, name)) {
    const fed = data.feeds[name];
    return fed instanceof Tensor ? fed : null;
  }
  const init = data.graph.initializer.find((t) => t.name === name);
  return init === undefined ? null : readTensorProto(init, `initializer ${JSON.stringify(name)}`);
}

/** The first element of `t` (flat index) failing `ok`, as a sentence, or null. */
function firstBad(t: Tensor, what: string, ok: (v: number, i: number) => boolean, expectation: string): string | null {
  const d = t.dataSync();
  for (let i = 0; i < d.length; i++) {
    const v = Number(d[i]);
    if (!ok(v, i)) return `${what}: element ${i} is ${v}, expected ${expectation}`;
  }
  return null;
}

/** `check` of every output tensor (each element of a sequence output too; an empty optional has none). */
function everyOutput(data: RandomCaseData, check: (t: Tensor, what: string) => string | null): string | null {
  const walk = (v: ModelValue | undefined, what: string): string | null => {
    if (v instanceof Tensor) return check(v, what);
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const m = walk(v[i], `${what}[${i}]`);
        if (m) return m;
      }
    }
    return null;
  };
  for (let k = 0; k < data.outputs.length; k++) {
    const m = walk(data.outputs[k], `output ${k}`);
    if (m) return m;
  }
  return null;
}

const uniform: RandomContract = {
  what: "every value in [low, high)",
  check(data) {
    const node = nodeOf(data.graph, "RandomUniform", "RandomUniformLike");
    const low = floatAttr(node, "low", 0);
    const high = floatAttr(node, "high", 1);
    return everyOutput(data, (t, what) => firstBad(t, what, (v) => v >= low && (v < high || (v === low && low === high)), `a value in [${low}, ${high})`));
  },
};

const normal: RandomContract = {
  what: "every value finite",
  check: (data) => everyOutput(data, (t, what) => firstBad(t, what, Number.isFinite, "a finite value")),
};

const bernoulli: RandomContract = {
  what: "every value 0 or 1 (and equal to p where the Bernoulli op's p is 0 or 1)",
  check(data) {
    const node = nodeOf(data.graph, "Bernoulli");
    const p = node ? valueOf(data, node.input[0])?.dataSync() ?? null : null;
    return everyOutput(data, (t, what) =>
      firstBad(t, what, (v, i) => (v === 0 || v === 1) && (p === null || (p[i] !== 0 && p[i] !== 1) || v === p[i]), "0 or 1 (p where p is 0 or 1)"),
    );
  },
};

const multinomial: RandomContract = {
  what: "every value a class index in [0, classes)",
  check(data) {
    const logits = valueOf(data, nodeOf(data.graph, "Multinomial")?.input[0]);
    if (logits === null) return "the logits of the Multinomial node are not an input or initializer of the case";
    const classes = logits.shape[logits.rank - 1]!;
    return everyOutput(data, (t, what) => firstBad(t, what, (v) => Number.isInteger(v) && v >= 0 && v < classes, `an integer in [0, ${classes})`));
  },
};

const dropout: RandomContract = {
  what: "output = input * mask / (1 - ratio) with a boolean mask (each element dropped to 0 or scaled)",
  check(data) {
    const node = nodeOf(data.graph, "Dropout");
    if (node === undefined) return "the case has no Dropout node";
    const x = valueOf(data, node.input[0]);
    if (x === null) return "the data input of the Dropout node is not an input or initializer of the case";
    const r = valueOf(data, node.input[1]);
    const ratio = r === null ? 0.5 : Number(r.dataSync()[0]);
    const scale = 1 / (1 - ratio);
    const xs = x.dataSync();
    const [y, mask] = data.outputs;
    if (!(y instanceof Tensor) || !(mask === undefined || mask instanceof Tensor)) return "the outputs of a Dropout case must be tensors";
    const shapes = typeMismatch(y, x);
    if (shapes !== null) return `output 0 against the Dropout's input: ${shapes}`;
    if (mask !== undefined) {
      if (mask.dtype !== "bool") return `the mask is ${mask.dtype}, expected bool`;
      // The output the mask returned makes: input * mask / (1 - ratio), in double, then y's dtype.
      const m = mask.dataSync();
      const expected = makeTensor("onnx.conformance", Float64Array.from(xs, (v, i) => (m[i] ? Number(v) * scale : 0)), [...y.shape], y.dtype);
      const d = mismatch(y, expected, data.tolerance);
      return d === null ? null : `output 0: ${d} (input * mask / (1 - ratio) for the mask returned, scale ${scale})`;
    }
    return firstBad(y, "output 0", (v, i) => v === 0 || floatMatches(v, Number(xs[i]) * scale, data.tolerance), `0 or input / (1 - ratio) (scale ${scale})`);
  },
};

/** The contract of each op family whose cases draw random numbers. */
export const RANDOM_CONTRACTS: ReadonlyMap<string, RandomContract> = new Map([
  ["RandomUniform", uniform],
  ["RandomUniformLike", uniform],
  ["RandomNormal", normal],
  ["RandomNormalLike", normal],
  ["Bernoulli", bernoulli],
  ["Multinomial", multinomial],
  ["Dropout", dropout],
]);
