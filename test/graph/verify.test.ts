import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { StagecraftError } from "../../src/core/errors.js";
import { FunctionLibrary, Graph, type Value, type ValueType } from "../../src/graph/ir.js";
import { getOp } from "../../src/ops/registry.js";
import { GraphVerificationError, verifyGraph } from "../../src/graph/verify.js";

const t = (dtype: sc.DType, ...shape: number[]): ValueType => ({ dtype, shape });

function op(g: Graph, name: string, inputs: Value[], attrs: Record<string, unknown> = {}): Value {
  return g.addNode(name, inputs, attrs, getOp(name).infer(inputs.map((v) => v.type), attrs)).outputs[0]!;
}
const scalar = (g: Graph, value: number, dtype: sc.DType = "float32") => op(g, "fill", [], { shape: [], dtype, value });

/** A region graph with the given input types whose body `fn` returns its outputs. */
function region(name: string, types: ValueType[], fn: (g: Graph, xs: Value[]) => Value[]): Graph {
  const g = new Graph(name);
  const xs = types.map((ty, i) => g.addInput(ty, `in${i}`));
  g.setOutputs(fn(g, xs));
  return g;
}

/** sq(x) = x * x, in a library. */
function squareLibrary(): FunctionLibrary {
  const lib = new FunctionLibrary();
  lib.add(region("sq", [t("float32", 3)], (g, [x]) => [op(g, "mul", [x!, x!])]));
  return lib;
}

/**
 * A valid graph with a cond, a while loop and a call:
 *   y = sum(x) > 0 ? x * 2 : -x;  while (i < 3) { i += 1; y = y + b };  return sq(y), i
 */
function validGraph(): { g: Graph; lib: FunctionLibrary } {
  const lib = squareLibrary();
  const g = new Graph("main");
  const x = g.addInput(t("float32", 3), "x");
  const b = g.addInput(t("float32", 3), "b");
  const p = op(g, "greater", [op(g, "sum", [x], { axes: [0], keepDims: false }), scalar(g, 0)]);
  const thenG = region("then", [t("float32", 3)], (r, [a]) => [op(r, "mul", [a!, scalar(r, 2)])]);
  const elseG = region("else", [t("float32", 3)], (r, [a]) => [op(r, "neg", [a!])]);
  const y = g.addNode("cond", [p, x], {}, [t("float32", 3)], [thenG, elseG]).outputs[0]!;
  const loopTypes = [t("int32"), t("float32", 3), t("float32", 3)];
  const condG = region("cond", loopTypes, (r, [i]) => [op(r, "less", [i!, scalar(r, 3, "int32")])]);
  const bodyG = region("body", loopTypes, (r, [i, acc, bb]) => [op(r, "add", [i!, scalar(r, 1, "int32")]), op(r, "add", [acc!, bb!])]);
  const [i, acc] = g.addNode("while", [scalar(g, 0, "int32"), y, b], { numLoopVars: 2 }, [t("int32"), t("float32", 3)], [condG, bodyG]).outputs;
  const sq = g.addNode("call", [acc!], { callee: "sq" }, [t("float32", 3)]).outputs[0]!;
  g.setOutputs([sq, i!], ["squared", "count"]);
  return { g, lib };
}

/** Asserts that verification fails with a GraphVerificationError whose message matches all of `res`. */
function fails(g: Graph, lib: FunctionLibrary | undefined, ...res: RegExp[]): void {
  assert.throws(
    () => verifyGraph(g, lib),
    (e: unknown) => {
      assert.ok(e instanceof GraphVerificationError, `expected a GraphVerificationError, got ${String(e)}`);
      for (const re of res) assert.match((e as Error).message, re);
      return true;
    },
  );
}

const nodeOf = (g: Graph, opName: string, nth = 0) => g.nodes.filter((n) => n.op === opName)[nth]!;

test("valid graphs pass: hand-built control flow and calls, variables, print, recursion", () => {
  const { g, lib } = validGraph();
  verifyGraph(g, lib);
  verifyGraph(lib.get("sq"), lib);

  // Unknown dims: the shape rule is not re-run, and region inputs may be more general than the operands.
  const u = new Graph("u");
  const x = u.addInput(t("float32", -1, 2), "x");
  const y = u.addNode("sum", [x], { axes: [0], keepDims: false }, [t("float32", 2)]).outputs[0]!;
  const p = u.addInput(t("bool"), "p");
  const c = u.addNode("cond", [p, y], {}, [t("float32", -1)], [region("then", [t("float32", -1)], (_r, [a]) => [a!]), region("else", [t("float32", 2)], (_r, [a]) => [a!])]).outputs[0]!;
  u.setOutputs([c]);
  verifyGraph(u);

  // Variables and print.
  const v = sc.variable([1, 2], { name: "v" });
  const gv = new Graph("vars");
  const r = gv.addNode("readVariable", [], { variable: v }, [t("float32", 2)]).outputs[0]!;
  gv.addNode("assignVariable", [op(gv, "neg", [r])], { variable: v }, []);
  gv.addNode("print", [r], { items: [{ text: "v =" }, { input: 0 }] }, []);
  gv.setOutputs([]);
  verifyGraph(gv);

  // Variadic ops take any number of inputs.
  const gc = new Graph("concat3");
  const a = gc.addInput(t("float32", 2), "a");
  gc.setOutputs([op(gc, "concat", [a, a, a], { axis: 0 })]);
  verifyGraph(gc);
});

test("staged graphs pass the verifier", () => {
  const v = sc.variable(sc.zeros([3]), { name: "acc" });
  const inner = sc.stage(function inner(x: sc.Tensor) {
    return sc.relu(x).mul(2);
  });
  const outer = sc.stage(function outer(x: sc.Tensor, n: sc.Tensor) {
    const y = sc.cond(x.sum().greater(0), () => x.mul(2), () => x.neg());
    const [, acc] = sc.whileLoop((i, _a) => i.less(n), (i, a) => [i.add(1), a.add(y)], [sc.zeros([], "int32"), v.read()]);
    v.assign(acc!);
    sc.print("acc:", acc!);
    return inner(acc!);
  });
  const cf = outer.concrete(sc.ones([3]), sc.tensor(3, "int32"));
  verifyGraph(cf.graph, cf.library);
  const relaxed = sc.stage((x: sc.Tensor) => sc.softmax(x.mul(x)), { inputSignature: [sc.spec([null, 4], "float32")] });
  const rc = relaxed.concrete(sc.ones([2, 4]));
  assert.equal(rc.graph.inputs[0]!.type.shape[0], -1);
  verifyGraph(rc.graph, rc.library);
});

test("GraphVerificationError: a StagecraftError without a user location, with the path", () => {
  const { g, lib } = validGraph();
  g.nodes[0]!.op = "frobnicate";
  try {
    verifyGraph(g, lib);
    assert.fail("expected an error");
  } catch (e) {
    assert.ok(e instanceof GraphVerificationError && e instanceof StagecraftError);
    assert.equal(e.location, null);
    assert.equal(e.path, "graph main > node 0 (frobnicate)");
    assert.ok(!/\(at /.test(e.message));
    assert.equal(e.message.split(":")[0], "graph verification failed in graph main > node 0 (frobnicate)");
  }
});

test("values: used before defined, from another graph, from an enclosing graph, defined twice, outputs", () => {
  {
    const { g, lib } = validGraph();
    [g.nodes[0], g.nodes[2]] = [g.nodes[2]!, g.nodes[0]!]; // greater before the sum it reads
    fails(g, lib, /node 0 \(greater\): input 0 %4 is used before it is defined/);
  }
  {
    const { g, lib } = validGraph();
    const other = new Graph("other");
    const stray = other.addInput(t("float32", 3), "stray");
    nodeOf(g, "call").inputs[0] = stray;
    fails(g, lib, /node 6 \(call\): input 0 a value from outside this function \(input 0 \(stray\) of some graph, float32\[3\]\) is not defined in this graph/);
  }
  {
    const { g, lib } = validGraph();
    // The then region uses the enclosing graph's input x directly.
    const thenG = nodeOf(g, "cond").regions[0]!;
    thenG.nodes[1]!.inputs[0] = g.inputs[0]!;
    fails(g, lib, /graph main > node 3 \(cond\) > region 0 \(then\) > node 1 \(mul\): input 0 %0 belongs to an enclosing graph; a region may only use its own inputs/);
  }
  {
    const { g, lib } = validGraph();
    // The else region returns the then region's value.
    const [thenG, elseG] = nodeOf(g, "cond").regions;
    elseG!.outputs[0] = thenG!.outputs[0]!;
    fails(g, lib, /region 1 \(else\): output 0 \(output_0\) %\d+ is not defined in this graph/);
  }
  {
    const { g, lib } = validGraph();
    g.outputs[1] = new Graph("x").addInput(t("int32"), "ghost");
    fails(g, lib, /graph main: output 1 \(count\) a value from outside this function .* is not defined in this graph/);
  }
  {
    const { g, lib } = validGraph();
    // The same value object recorded as the output of two nodes.
    const n = g.nodes[1]!;
    g.nodes[0]!.outputs = [n.outputs[0]!];
    fails(g, lib, /node 0 \(sum\): output 0 \(%2\) is recorded as output 0 of a fill node/);
  }
  {
    // The same node inserted twice.
    const { g, lib } = validGraph();
    g.nodes.splice(1, 0, g.nodes[0]!);
    fails(g, lib, /graph main > node 1 \(sum\): %2 is defined twice: by output 0 of graph main > node 0 \(sum\) and by output 0 of graph main > node 1 \(sum\)/);
  }
  {
    const g = new Graph("dup");
    const x = g.addInput(t("float32"), "x");
    g.inputs.push(x);
    g.inputNames.push("x again");
    g.setOutputs([x]);
    fails(g, undefined, /input 1 \(x again\) is recorded as input 0, not input 1 of this graph/);
  }
  {
    // A region object shared by two nodes defines its values twice.
    const g = new Graph("shared");
    const p = g.addInput(t("bool"), "p");
    const x = g.addInput(t("float32"), "x");
    const r = region("then", [t("float32")], (_g, [a]) => [a!]);
    const c1 = g.addNode("cond", [p, x], {}, [t("float32")], [r, region("else", [t("float32")], (_g, [a]) => [a!])]).outputs[0]!;
    const c2 = g.addNode("cond", [p, c1], {}, [t("float32")], [r, region("else", [t("float32")], (_g, [a]) => [a!])]).outputs[0]!;
    g.setOutputs([c2]);
    fails(g, undefined, /node 1 \(cond\) > region 0 \(then\): %\d+ is defined twice: by input 0 of graph shared > node 0 \(cond\) > region 0 \(then\) and by input 0 of graph shared > node 1 \(cond\)/);
  }
  {
    const { g, lib } = validGraph();
    g.outputNames.pop();
    fails(g, lib, /graph main: 2 outputs but 1 output name/);
  }
});

test("registry ops: unknown ops, arity, recorded types against the shape rule", () => {
  {
    const { g, lib } = validGraph();
    g.nodes[0]!.op = "frobnicate";
    fails(g, lib, /node 0 \(frobnicate\): unknown op "frobnicate" \(neither a registry op nor a structural op: cond, while, call/);
  }
  {
    const { g, lib } = validGraph();
    const neg = nodeOf(g, "cond").regions[1]!.nodes[0]!;
    neg.inputs.push(neg.inputs[0]!);
    fails(g, lib, /region 1 \(else\) > node 0 \(neg\): neg takes 1 input \(x\), got 2/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "sum").outputs[0]!.type = t("float32", 1);
    fails(g, lib, /node 0 \(sum\): output 0 is recorded as float32\[1\], but sum's shape rule gives float32\[\]/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "greater").outputs[0]!.type = t("float32");
    fails(g, lib, /node 2 \(greater\): output 0 is recorded as float32\[\], but greater's shape rule gives bool\[\]/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "sum").outputs.push(nodeOf(g, "sum").outputs[0]!);
    fails(g, lib, /node 0 \(sum\): sum produces 1 output, but the node records 2/);
  }
  {
    const g = new Graph("bad");
    const a = g.addInput(t("float32", 2), "a");
    const b = g.addInput(t("float32", 3), "b");
    g.setOutputs(g.addNode("add", [a, b], {}, [t("float32", 3)]).outputs);
    fails(g, undefined, /node 0 \(add\): the shape rule of add rejects its inputs \(float32\[2\], float32\[3\]\): add: .*\[2\].*\[3\]/);
  }
  {
    const g = new Graph("badMatmul");
    const a = g.addInput(t("float32", 2, 3), "a");
    g.setOutputs(g.addNode("matmul", [a, a], { transposeA: false, transposeB: false }, [t("float32", 2, 3)]).outputs);
    fails(g, undefined, /the shape rule of matmul rejects its inputs \(float32\[2, 3\], float32\[2, 3\]\): matmul: /);
  }
  {
    // With an unknown input dim the shape rule is not re-run.
    const g = new Graph("unknown");
    const a = g.addInput(t("float32", -1), "a");
    g.setOutputs(g.addNode("neg", [a], {}, [t("float32", 5)]).outputs);
    verifyGraph(g);
  }
  {
    const g = new Graph("regions");
    const a = g.addInput(t("float32"), "a");
    g.setOutputs(g.addNode("neg", [a], {}, [t("float32")], [new Graph("r")]).outputs);
    fails(g, undefined, /registry op neg cannot have regions \(got 1\)/);
  }
});

test("cond: predicate, region counts, operand and output types", () => {
  {
    const { g, lib } = validGraph();
    nodeOf(g, "cond").inputs[0] = g.inputs[0]!;
    fails(g, lib, /node 3 \(cond\): the predicate %0 must be a bool scalar, got float32\[3\]/);
  }
  {
    const g = new Graph("c");
    const p = g.addInput(t("bool", 2), "p");
    g.setOutputs(g.addNode("cond", [p], {}, [], [region("then", [], () => []), region("else", [], () => [])]).outputs);
    fails(g, undefined, /the predicate %0 must be a bool scalar, got bool\[2\]/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "cond").regions.pop();
    fails(g, lib, /node 3 \(cond\): cond needs 2 regions \(then, else\), got 1/);
  }
  {
    const { g, lib } = validGraph();
    const c = nodeOf(g, "cond");
    c.regions[1] = region("else", [t("float32", 3), t("float32", 3)], (_r, [a]) => [a!]);
    fails(g, lib, /node 3 \(cond\): the else region takes 2 inputs but the node passes 1 operand/);
  }
  {
    const { g, lib } = validGraph();
    const c = nodeOf(g, "cond");
    c.regions[0] = region("then", [t("float64", 3)], (_r, [a]) => [a!]);
    fails(g, lib, /the then region's input 0 has type float64\[3\], but the operand %0 is float32\[3\]/);
  }
  {
    const { g, lib } = validGraph();
    const c = nodeOf(g, "cond");
    c.regions[1] = region("else", [t("float32", 3)], (_r, [a]) => [a!, a!]);
    fails(g, lib, /the else region returns 2 values, but the cond node has 1 output/);
  }
  {
    const { g, lib } = validGraph();
    const c = nodeOf(g, "cond");
    c.regions[1] = region("else", [t("float32", 3)], (r, [a]) => [op(r, "sum", [a!], { axes: [0], keepDims: true })]);
    fails(g, lib, /the else region's output 0 is float32\[1\], but the cond node's output 0 is float32\[3\]/);
  }
  {
    const { g, lib } = validGraph();
    const c = nodeOf(g, "cond");
    c.regions[0] = region("then", [t("float32", 3)], (r, [a]) => [op(r, "cast", [a!], { dtype: "int32" })]);
    fails(g, lib, /the then region's output 0 is int32\[3\], but the cond node's output 0 is float32\[3\]/);
  }
});

test("while: loop variable counts and types, the condition, attributes", () => {
  const loopTypes = [t("int32"), t("float32", 3), t("float32", 3)];
  {
    const { g, lib } = validGraph();
    nodeOf(g, "while").regions[1] = region("body", loopTypes, (_r, [i]) => [i!]);
    fails(g, lib, /node 5 \(while\): the body region returns 1 value, but the loop has 2 loop variables/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "while").regions[1] = region("body", loopTypes, (r, [i, acc]) => [i!, op(r, "cast", [acc!], { dtype: "float64" })]);
    fails(g, lib, /the body region's output 1 is float64\[3\], which does not match loop variable 1 \(float32\[3\]\)/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "while").regions[1] = region("body", loopTypes, (r, [i, acc]) => [i!, op(r, "concat", [acc!, acc!], { axis: 0 })]);
    fails(g, lib, /the body region's output 1 is float32\[6\], which does not match loop variable 1 \(float32\[3\]\)/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "while").regions[0] = region("cond", loopTypes, (_r, [, acc]) => [acc!]);
    fails(g, lib, /the cond region must return one bool scalar, got \(float32\[3\]\)/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "while").regions[0] = region("cond", loopTypes.slice(0, 2), (r, [i]) => [op(r, "less", [i!, scalar(r, 3, "int32")])]);
    fails(g, lib, /the cond region takes 2 inputs but the node passes 3 operands/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "while").attrs.numLoopVars = 4;
    fails(g, lib, /attrs.numLoopVars must be an integer in \[0, 3\], got 4/);
  }
  {
    const { g, lib } = validGraph();
    delete nodeOf(g, "while").attrs.numLoopVars;
    fails(g, lib, /attrs.numLoopVars must be an integer in \[0, 3\], got undefined/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "while").attrs.maxIterations = -1;
    fails(g, lib, /attrs.maxIterations must be a non-negative integer, got -1/);
  }
  {
    const { g, lib } = validGraph();
    const w = nodeOf(g, "while");
    w.outputs[0]!.type = t("int64");
    fails(g, lib, /the while node's output 0 is int64\[\], but loop variable 0 is int32\[\] initially and int32\[\] after the body/);
  }
  {
    const { g, lib } = validGraph();
    const w = nodeOf(g, "while");
    w.outputs.pop();
    g.outputs[1] = w.outputs[0]!;
    fails(g, lib, /the while node has 1 output, but 2 loop variables/);
  }
});

test("call: missing callee, no library, arity and types; library functions are verified too", () => {
  {
    const { g } = validGraph();
    fails(g, new FunctionLibrary(), /node 6 \(call\): calls sq, which is not in the function library/);
    fails(g, undefined, /calls sq, but no function library was given/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "call").attrs.callee = 42;
    fails(g, lib, /attrs.callee must be a function name, got 42/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "call").inputs.push(g.inputs[0]!);
    fails(g, lib, /calls sq with 2 arguments, but it takes 1/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "call").inputs[0] = nodeOf(g, "while").outputs[0]!;
    fails(g, lib, /argument 0 \(%\d+\) is int32\[\], but sq's input 0 \(in0\) is float32\[3\]/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "call").outputs[0]!.type = t("float32", 4);
    fails(g, lib, /output 0 is float32\[4\], but sq's output 0 \(output_0\) is float32\[3\]/);
  }
  {
    const { g, lib } = validGraph();
    nodeOf(g, "call").outputs.push(nodeOf(g, "call").outputs[0]!);
    fails(g, lib, /the call has 2 outputs, but sq returns 1/);
  }
  {
    // A broken library function is reported with its name, even when verifying the caller.
    const { g, lib } = validGraph();
    lib.get("sq").nodes[0]!.op = "bogus";
    fails(g, lib, /failed in function sq > node 0 \(bogus\): unknown op "bogus"/);
  }
  {
    // Recursion: a function calling itself verifies (each function once), arity is checked on the recursive call.
    const lib = new FunctionLibrary();
    const f = region("loop", [t("float32")], (r, [x]) => r.addNode("call", [x!], { callee: "loop" }, [t("float32")]).outputs);
    lib.add(f);
    verifyGraph(f, lib);
    f.nodes[0]!.inputs.push(f.inputs[0]!);
    fails(f, lib, /failed in function loop > node 0 \(call\): calls loop with 2 arguments, but it takes 1/);
  }
});

test("variables, print and hostCall nodes", () => {
  const v = sc.variable([1, 2], { name: "v" });
  const mk = (build: (g: Graph) => void) => {
    const g = new Graph("vars");
    build(g);
    return g;
  };
  fails(
    mk((g) => g.setOutputs(g.addNode("readVariable", [], { variable: v }, [t("float32", 3)]).outputs)),
    undefined,
    /node 0 \(readVariable\): reads variable v \(float32\[2\]\) into a float32\[3\] value/,
  );
  fails(
    mk((g) => g.setOutputs(g.addNode("readVariable", [], { variable: "v" }, [t("float32", 2)]).outputs)),
    undefined,
    /attrs.variable must be a Variable/,
  );
  fails(
    mk((g) => {
      g.addNode("assignVariable", [g.addInput(t("int32", 2), "x")], { variable: v }, []);
      g.setOutputs([]);
    }),
    undefined,
    /node 0 \(assignVariable\): assigns %0 \(int32\[2\]\) to variable v \(float32\[2\]\)/,
  );
  fails(
    mk((g) => {
      g.addNode("assignVariable", [], { variable: v }, []);
      g.setOutputs([]);
    }),
    undefined,
    /assignVariable takes one input and has no outputs, got 0 and 0/,
  );
  fails(
    mk((g) => {
      g.addNode("print", [g.addInput(t("float32"), "x")], { items: [{ text: "x" }, { input: 1 }] }, []);
      g.setOutputs([]);
    }),
    undefined,
    /print item 1 must be \{text: string\} or \{input: k\} with k < 1, got \{"input":1\}/,
  );
  fails(
    mk((g) => {
      const x = g.addInput(t("float32"), "x");
      g.setOutputs(g.addNode("hostCall", [x], { fnId: 1, name: "f", outputs: [{ dtype: "float32", shape: [2] }] }, [t("float32", 3)]).outputs);
    }),
    undefined,
    /node 0 \(hostCall\): output 0 is recorded as float32\[3\], but hostCall's shape rule gives float32\[2\]/,
  );
  fails(
    mk((g) => {
      g.setOutputs(g.addNode("hostCall", [], { name: "f", outputs: [] }, []).outputs);
    }),
    undefined,
    /attrs.fnId must be a number, got undefined/,
  );
  fails(
    mk((g) => {
      g.setOutputs(g.addNode("hostCall", [], { fnId: 3, name: "f" }, []).outputs);
    }),
    undefined,
    /attrs.outputs must be an array of \{dtype, shape\} output specs, got undefined/,
  );
});
