import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { FunctionLibrary, Graph, type Value, type ValueType } from "../../src/graph/ir.js";
import { getOp } from "../../src/ops/registry.js";
import { printGraph, printLibrary, formatAttrValue } from "../../src/graph/printer.js";
import { parseSExpr, toSExpr } from "../../src/graph/sexpr.js";
import { graphDifference, graphsEqual, libraryDifference, librariesEqual } from "../../src/graph/equal.js";
import { verifyGraph } from "../../src/graph/verify.js";
import { interpret } from "../../src/exec/interpreter.js";

// ---- building graphs by hand ---------------------------------------------------------------

const t = (dtype: sc.DType, ...shape: number[]): ValueType => ({ dtype, shape });

/** Adds a registry-op node whose output types come from the op's own shape rule. */
function op(g: Graph, name: string, inputs: Value[], attrs: Record<string, unknown> = {}): Value[] {
  const types = getOp(name).infer(
    inputs.map((v) => v.type),
    attrs,
  );
  return g.addNode(name, inputs, attrs, types).outputs;
}
const op1 = (g: Graph, name: string, inputs: Value[], attrs: Record<string, unknown> = {}) => op(g, name, inputs, attrs)[0]!;
const scalar = (g: Graph, value: number, dtype: sc.DType = "float32") => op1(g, "fill", [], { shape: [], dtype, value });

/** fact(n, acc) = n <= 0 ? acc : fact(n - 1, acc * n), recursive through the library. */
function factorialLibrary(): FunctionLibrary {
  const lib = new FunctionLibrary();
  const f = new Graph("fact");
  const n = f.addInput(t("float32"), "n");
  const acc = f.addInput(t("float32"), "acc");
  const done = op1(f, "lessEqual", [n, scalar(f, 0)]);
  const thenG = new Graph("then");
  thenG.addInput(t("float32"), "n");
  const tAcc = thenG.addInput(t("float32"), "acc");
  thenG.setOutputs([tAcc]);
  const elseG = new Graph("else");
  const en = elseG.addInput(t("float32"), "n");
  const eAcc = elseG.addInput(t("float32"), "acc");
  const n1 = op1(elseG, "sub", [en, scalar(elseG, 1)]);
  const acc1 = op1(elseG, "mul", [eAcc, en]);
  const r = elseG.addNode("call", [n1, acc1], { callee: "fact" }, [t("float32")]).outputs[0]!;
  elseG.setOutputs([r]);
  const out = f.addNode("cond", [done, n, acc], {}, [t("float32")], [thenG, elseG]).outputs[0]!;
  f.setOutputs([out], ["result"]);
  lib.add(f);
  return lib;
}

const weirdAttrs = () => ({
  int: 3,
  negZero: -0,
  nan: NaN,
  inf: Infinity,
  negInf: -Infinity,
  tiny: 5e-324,
  big: 1.7976931348623157e308,
  frac: 0.1 + 0.2,
  str: 'quote " backslash \\ newline \n tab \t unicode é \u2028 emoji 😀 nul \u0000',
  empty: "",
  looksLikeNumber: "12",
  yes: true,
  no: false,
  nothing: null,
  missing: undefined,
  list: [1, [2, [3, []]], "x", null, false],
  emptyList: [],
  object: { a: 1, "b c": [true], nested: { deeper: { x: -1.5 } }, "%weird(key)": "v" },
  emptyObject: {},
  typed: new Float32Array([1.5, -0, NaN]),
  ints: new Int32Array([-2, 7]),
});

/**
 * A graph with every construct: unknown dims, a cond whose branches compute, a while loop with
 * invariants, a call into a recursive library function, variable reads and assignments, a print,
 * a multi-output op, and attributes of every kind.
 */
function bigGraph(v: sc.Variable): { g: Graph; lib: FunctionLibrary } {
  const lib = factorialLibrary();
  const g = new Graph("main");
  const x = g.addInput(t("float32", -1, 3), "x");
  const n = g.addInput(t("float32"), "n");
  const k = g.addInput(t("int32"), "k");
  const w = g.addNode("readVariable", [], { variable: v }, [t("float32", 3)]).outputs[0]!;
  const y = g.addNode("add", [x, w], {}, [t("float32", -1, 3)]).outputs[0]!;
  const s = g.addNode("sum", [y], { axes: [0], keepDims: false }, [t("float32", 3)]).outputs[0]!;
  const [p1, p2] = op(g, "split", [s], { sizes: [1, 2], axis: 0 });
  // cond(p, s, p1): then -> s * 2, else -> -s + p1
  const pred = op1(g, "greater", [op1(g, "sum", [s], { axes: [0], keepDims: false }), scalar(g, 0)]);
  const thenG = new Graph("then");
  const ts = thenG.addInput(t("float32", 3), "s");
  thenG.addInput(t("float32", 1), "p1");
  thenG.setOutputs([op1(thenG, "mul", [ts, scalar(thenG, 2)])]);
  const elseG = new Graph("else");
  const es = elseG.addInput(t("float32", 3), "s");
  const ep = elseG.addInput(t("float32", 1), "p1");
  elseG.setOutputs([op1(elseG, "add", [op1(elseG, "neg", [es]), ep])]);
  const c = g.addNode("cond", [pred, s, p1!], { note: "branches" }, [t("float32", 3)], [thenG, elseG]).outputs[0]!;
  // while (i < k) { i += 1; acc = acc * 0.5 + c }
  const condG = new Graph("cond");
  const ci = condG.addInput(t("int32"), "i");
  condG.addInput(t("float32", 3), "acc");
  const ck = condG.addInput(t("int32"), "k");
  condG.addInput(t("float32", 3), "c");
  condG.setOutputs([op1(condG, "less", [ci, ck])]);
  const bodyG = new Graph("body");
  const bi = bodyG.addInput(t("int32"), "i");
  const bacc = bodyG.addInput(t("float32", 3), "acc");
  bodyG.addInput(t("int32"), "k");
  const bc = bodyG.addInput(t("float32", 3), "c");
  bodyG.setOutputs([op1(bodyG, "add", [bi, scalar(bodyG, 1, "int32")]), op1(bodyG, "add", [op1(bodyG, "mul", [bacc, scalar(bodyG, 0.5)]), bc])]);
  const [, acc] = g.addNode("while", [scalar(g, 0, "int32"), c, k, c], { numLoopVars: 2, maxIterations: 100 }, [t("int32"), t("float32", 3)], [condG, bodyG]).outputs;
  g.addNode("assignVariable", [acc!], { variable: v }, []);
  const fact = g.addNode("call", [n, scalar(g, 1)], { callee: "fact" }, [t("float32")]).outputs[0]!;
  g.addNode("print", [fact, p2!], { items: [{ text: "fact =" }, { input: 0 }, { text: "p2 =" }, { input: 1 }] }, []);
  const out = op1(g, "mul", [acc!, fact]);
  g.addNode("identity", [out], weirdAttrs(), [t("float32", 3)]);
  g.setOutputs([out, fact, y], ["scaled", "fact", "y with spaces"]);
  return { g, lib };
}

// ---- printer -------------------------------------------------------------------------------

test("printGraph: canonical numbering, types with unknown dims, compact attrs", () => {
  const g = new Graph("f");
  const a = g.addInput(t("float32", 2, 3), "arg0");
  const b = g.addInput(t("float32", 3), "capture_0");
  const s = op1(g, "add", [a, b]);
  const r = g.addNode("sum", [s], { axes: [0], keepDims: false }, [t("float32", -1)]).outputs[0]!;
  g.setOutputs([r, s]);
  assert.equal(
    printGraph(g),
    [
      "graph f(%0 arg0: float32[2, 3], %1 capture_0: float32[3]) -> (output_0: float32[?], output_1: float32[2, 3]) {",
      "  %2: float32[2, 3] = add(%0, %1)",
      "  %3: float32[?] = sum(%2) {axes: [0], keepDims: false}",
      "  return %3, %2",
      "}",
    ].join("\n"),
  );
});

test("printGraph: regions, calls, variables and the library", () => {
  const lib = factorialLibrary();
  const fact = lib.get("fact");
  assert.equal(
    printLibrary(lib),
    [
      "function fact(%0 n: float32[], %1 acc: float32[]) -> (result: float32[]) {",
      '  %2: float32[] = fill() {shape: [], dtype: "float32", value: 0}',
      "  %3: bool[] = lessEqual(%0, %2)",
      "  %4: float32[] = cond(%3, %0, %1) {",
      "    then(%5 n: float32[], %6 acc: float32[]) -> (output_0: float32[]) {",
      "      return %6",
      "    }",
      "    else(%7 n: float32[], %8 acc: float32[]) -> (output_0: float32[]) {",
      '      %9: float32[] = fill() {shape: [], dtype: "float32", value: 1}',
      "      %10: float32[] = sub(%7, %9)",
      "      %11: float32[] = mul(%8, %7)",
      "      %12: float32[] = call @fact(%10, %11)",
      "      return %12",
      "    }",
      "  }",
      "  return %4",
      "}",
    ].join("\n"),
  );
  assert.ok(printLibrary(lib, fact).startsWith("graph fact("), "the root prints first, as a graph, and only once");
  assert.equal(printLibrary(lib, fact).match(/^(graph|function) fact\(/gm)?.length, 1);

  const v = sc.variable([1, 2, 3], { name: "weights" });
  const { g } = bigGraph(v);
  const text = printGraph(g);
  assert.match(text, /%\d+: float32\[3\] = readVariable\(\) \{variable: weights\}/);
  assert.match(text, /assignVariable\(%\d+\) \{variable: weights\}/);
  assert.match(text, /%\d+: int32\[\], %\d+: float32\[3\] = while\(.*\) \{numLoopVars: 2, maxIterations: 100\} \{/);
  assert.match(text, /%\d+: float32\[1\], %\d+: float32\[2\] = split\(%\d+\) \{sizes: \[1, 2\], axis: 0\}/);
  assert.match(text, /call @fact\(%1, %\d+\)/);
  assert.match(text, /-> \(scaled: float32\[3\], fact: float32\[\], "y with spaces": float32\[\?, 3\]\)/);
  assert.match(text, /^ {4}cond\(/m);
  assert.match(text, /^ {4}body\(/m);
});

test("formatAttrValue: every kind of attribute", () => {
  assert.equal(formatAttrValue(-0), "-0");
  assert.equal(formatAttrValue(NaN), "NaN");
  assert.equal(formatAttrValue(-Infinity), "-Infinity");
  assert.equal(formatAttrValue("a\"b"), '"a\\"b"');
  assert.equal(formatAttrValue([1, [true, null]]), "[1, [true, null]]");
  assert.equal(formatAttrValue({ a: 1, "b c": undefined }), '{a: 1, "b c": undefined}');
  assert.equal(formatAttrValue(new Int32Array([1, 2])), "Int32Array[1, 2]");
  assert.equal(formatAttrValue({}), "{}");
});

// ---- S-expressions -------------------------------------------------------------------------

test("toSExpr: the module form of a small graph", () => {
  const g = new Graph("f");
  const a = g.addInput(t("float32", 2, -1), "arg0");
  const r = g.addNode("sum", [a], { axes: [1], keepDims: true }, [t("float32", 2, 1)]).outputs[0]!;
  g.setOutputs([r]);
  assert.equal(
    toSExpr(g),
    [
      "(module",
      "  (graph f",
      "    (inputs (%0 arg0 float32 (2 ?)))",
      "    (nodes",
      "      (node sum (inputs %0) (attrs (axes (list 1)) (keepDims true)) (outputs (%1 float32 (2 1)))))",
      "    (outputs (output_0 %1))))",
      "",
    ].join("\n"),
  );
});

function roundTrip(g: Graph, lib: FunctionLibrary | undefined, variables?: Map<number, sc.Variable>): { graph: Graph; library: FunctionLibrary } {
  const text = toSExpr(g, lib);
  const parsed = parseSExpr(text, { variables });
  const d = graphDifference(g, parsed.graph, lib, parsed.library);
  assert.equal(d, null, `round trip differs: ${d}`);
  assert.ok(graphsEqual(g, parsed.graph, lib, parsed.library));
  if (lib) assert.equal(libraryDifference(lib, parsed.library), null);
  assert.equal(toSExpr(parsed.graph, parsed.library), text, "write(read(write(g))) === write(g)");
  assert.equal(printGraph(parsed.graph), printGraph(g), "print(parse(print(g))) === print(g)");
  if (lib) assert.equal(printLibrary(parsed.library, parsed.graph), printLibrary(lib, g));
  return parsed;
}

test("S-expression round trip: every construct and every kind of attribute", () => {
  const v = sc.variable([1, 2, 3], { name: "weights" });
  const { g, lib } = bigGraph(v);
  verifyGraph(g, lib);
  const parsed = roundTrip(g, lib, new Map([[v.variableId, v]]));
  verifyGraph(parsed.graph, parsed.library);
  assert.ok(!/[\u2028\u2029]/.test(toSExpr(g, lib)), "line separators are escaped");

  // Attributes come back exactly (-0, NaN, escapes, undefined, typed arrays).
  const idNode = parsed.graph.nodes.find((n) => n.op === "identity")!;
  const a = idNode.attrs as ReturnType<typeof weirdAttrs>;
  const want = weirdAttrs();
  assert.ok(Object.is(a.negZero, -0));
  assert.ok(Number.isNaN(a.nan));
  assert.equal(a.tiny, 5e-324);
  assert.equal(a.big, want.big);
  assert.equal(a.frac, 0.30000000000000004);
  assert.equal(a.str, want.str);
  assert.equal(a.looksLikeNumber, "12");
  assert.ok("missing" in a && a.missing === undefined);
  assert.deepEqual(a.list, want.list);
  assert.deepEqual(a.object, want.object);
  assert.ok(a.typed instanceof Float32Array);
  assert.ok(Object.is(a.typed[1], -0) && Number.isNaN(a.typed[2]));
  assert.deepEqual([...a.ints], [-2, 7]);
  assert.deepEqual(Object.keys(a), Object.keys(want), "attribute order is kept");
  // Variables resolve to the very same object.
  assert.equal(parsed.graph.nodes[0]!.attrs.variable, v);
  // Unknown dims and names survive.
  assert.deepEqual(parsed.graph.inputs[0]!.type.shape, [-1, 3]);
  assert.deepEqual(parsed.graph.outputNames, ["scaled", "fact", "y with spaces"]);
});

test("S-expression round trip: variables resolved by a function; the root inside its own library", () => {
  const v = sc.variable([[1, 2]], { name: "a \"quoted\" name" });
  const g = new Graph("reader");
  const r = g.addNode("readVariable", [], { variable: v }, [t("float32", 1, 2)]).outputs[0]!;
  g.setOutputs([op1(g, "neg", [r])]);
  const seen: [number, string][] = [];
  const parsed = parseSExpr(toSExpr(g), {
    variables: (id, name) => {
      seen.push([id, name]);
      return v;
    },
  });
  assert.deepEqual(seen, [[v.variableId, 'a "quoted" name']]);
  assert.ok(graphsEqual(g, parsed.graph));

  // A recursive function that is itself the root: written once, as the first (function ...).
  const lib = factorialLibrary();
  const fact = lib.get("fact");
  const text = toSExpr(fact, lib);
  assert.equal(text.match(/\(function fact/g)?.length, 1);
  assert.ok(!text.includes("(graph fact"));
  const back = roundTrip(fact, lib);
  assert.equal(back.library.get("fact"), back.graph, "the parsed root is the library's function");
});

test("a parsed graph runs and gives the original's results (recursive call, cond, while)", () => {
  const v = sc.variable([1, 2, 3], { name: "weights" });
  const { g, lib } = bigGraph(v);
  const parsed = parseSExpr(toSExpr(g, lib), { variables: new Map([[v.variableId, v]]) });
  const inputs = [sc.tensor([[1, -2, 3], [0.5, 0.5, -8]]), sc.scalar(4), sc.tensor(3, "int32")];
  const log = console.log;
  const lines: string[] = [];
  console.log = (...xs: unknown[]) => void lines.push(xs.join(" "));
  let a: sc.Tensor[], b: sc.Tensor[];
  try {
    v.assign([1, 2, 3]);
    a = interpret(g, inputs, { library: lib });
    const va = v.peek().arraySync();
    v.assign([1, 2, 3]);
    b = interpret(parsed.graph, inputs, { library: parsed.library });
    assert.deepEqual(v.peek().arraySync(), va);
  } finally {
    console.log = log;
  }
  assert.equal(lines.length, 2);
  assert.equal(lines[0], lines[1]);
  assert.match(lines[0]!, /^fact = /);
  a.forEach((x, i) => assert.deepEqual(b[i]!.arraySync(), x.arraySync()));
  // fact(4) = 24 computed through the recursion.
  assert.equal(a[1]!.item(), 24);
  // y = x + w, the sum over axis 0 is [3.5, 2.5, 1]; its total is > 0, so c = 2 * s = [7, 5, 2];
  // three loop iterations of acc = acc / 2 + c from acc = c: acc = c * (1 + 1/2 + 1/4 + 1/8).
  const c = [7, 5, 2];
  assert.deepEqual(a[0]!.arraySync(), c.map((x) => x * 1.875 * 24));
});

test("graphsEqual: equal modulo value ids, and each kind of difference is found", () => {
  const build = (mut: (o: { opName: string; swap: boolean; attr: unknown; dim: number; inName: string; outName: string; name: string }) => void = () => {}) => {
    const o = { opName: "sub", swap: false, attr: 0, dim: 3, inName: "x", outName: "y", name: "g" };
    mut(o);
    const g = new Graph(o.name);
    const x = g.addInput(t("float32", o.dim), o.inName);
    const y = g.addInput(t("float32", o.dim), "y");
    const z = g.addNode(o.opName, o.swap ? [y, x] : [x, y], { k: o.attr }, [t("float32", o.dim)]).outputs[0]!;
    g.setOutputs([z], [o.outName]);
    return g;
  };
  assert.ok(graphsEqual(build(), build()));
  assert.ok(!graphsEqual(build(), build((o) => (o.opName = "add"))));
  assert.ok(!graphsEqual(build(), build((o) => (o.swap = true))));
  assert.ok(!graphsEqual(build(), build((o) => (o.attr = -0))), "-0 and 0 differ");
  assert.ok(graphsEqual(build((o) => (o.attr = NaN)), build((o) => (o.attr = NaN))), "NaN equals NaN");
  assert.ok(!graphsEqual(build(), build((o) => (o.attr = [0]))));
  assert.ok(!graphsEqual(build((o) => (o.attr = { a: 1 })), build((o) => (o.attr = { a: 1, b: undefined }))));
  assert.ok(graphsEqual(build((o) => (o.attr = { a: 1, b: [2] })), build((o) => (o.attr = { b: [2], a: 1 }))), "key order is ignored");
  assert.ok(!graphsEqual(build(), build((o) => (o.dim = -1))));
  assert.ok(!graphsEqual(build(), build((o) => (o.inName = "x2"))));
  assert.ok(!graphsEqual(build(), build((o) => (o.outName = "out"))));
  assert.ok(!graphsEqual(build(), build((o) => (o.name = "h"))));
  assert.ok(graphsEqual(build(), build((o) => (o.name = "h")), undefined, undefined, { ignoreGraphNames: true }));
  assert.match(graphDifference(build(), build((o) => (o.swap = true)))!, /node 0 \(sub\): input 0 is wired differently/);

  // Output wiring: same nodes, a different value returned.
  const g1 = build();
  const g2 = build();
  g2.setOutputs([g2.inputs[0]!], ["y"]);
  assert.ok(!graphsEqual(g1, g2));

  // Regions and callees are compared too.
  const l1 = factorialLibrary();
  const l2 = factorialLibrary();
  assert.ok(librariesEqual(l1, l2));
  const f2 = l2.get("fact");
  const elseNodes = f2.nodes[2]!.regions[1]!.nodes;
  elseNodes[2]!.op = "add";
  assert.ok(!librariesEqual(l1, l2));
  assert.match(libraryDifference(l1, l2)!, /region 1 > node 2 \(mul\): op mul vs add/);
  const caller = (lib: FunctionLibrary) => {
    const g = new Graph("main");
    const n = g.addInput(t("float32"), "n");
    g.setOutputs(g.addNode("call", [n, n], { callee: "fact" }, [t("float32")]).outputs);
    return { g, lib };
  };
  const c1 = caller(l1);
  const c2 = caller(l2);
  assert.ok(graphsEqual(c1.g, c2.g), "without libraries, calls compare by callee name");
  assert.ok(!graphsEqual(c1.g, c2.g, c1.lib, c2.lib), "with libraries, the callee bodies are compared");
  assert.ok(graphsEqual(c1.g, caller(factorialLibrary()).g, c1.lib, factorialLibrary()), "recursive callees compare without looping");
});

// ---- parse errors ------------------------------------------------------------------------

test("parseSExpr: errors are ValueErrors with the line:column of the offending token", () => {
  /** `marked` has a ‸ right before the offending token; the error must point there. */
  const fails = (marked: string, re: RegExp, opts?: Parameters<typeof parseSExpr>[1]) => {
    const at = marked.indexOf("‸");
    assert.ok(at >= 0, "the test text marks the offending token");
    const text = marked.slice(0, at) + marked.slice(at + 1);
    const before = text.slice(0, at).split("\n");
    const where = `${before.length}:${before[before.length - 1]!.length + 1}`;
    assert.throws(
      () => parseSExpr(text, opts),
      (e: unknown) => {
        assert.ok(e instanceof sc.ValueError, `expected a ValueError, got ${String(e)}`);
        const msg = (e as Error).message;
        assert.ok(msg.startsWith(`parseSExpr: ${where}: `), `expected the error at ${where}: ${msg}`);
        assert.match(msg, re);
        assert.deepEqual((e as sc.ValueError).location, { file: "<sexpr>", line: Number(where.split(":")[0]), column: Number(where.split(":")[1]) });
        return true;
      },
    );
  };
  fails("‸", /expected \(module \.\.\.\), found nothing/);
  fails("‸(module", /unclosed "\("/);
  fails("(module ‸(graph f\n  (inputs) (nodes) (outputs)", /unclosed "\(" \(the text ends at 2:29\)/);
  fails("(module)‸)", /unexpected "\)"/);
  fails("(‸modul)", /expected \(module \.\.\.\)/);
  fails('(module (graph f (inputs (%0 x float32 ())) (nodes) (outputs (y ‸"%0"))))', /expected a value like %0, found the string "%0"/);
  fails("(module\n  (graph f\n    (inputs (%0 x ‸float33 ()))\n    (nodes)\n    (outputs)))", /unknown dtype "float33"/);
  fails("(module (graph f (inputs (%0 x float32 (2 ‸-3))) (nodes) (outputs)))", /expected a dimension \(a non-negative integer or \?\), found "-3"/);
  fails("(module (graph f (inputs (%0 x float32 (2 ‸1.5))) (nodes) (outputs)))", /expected a dimension/);
  fails("(module (graph f (inputs) (nodes (node neg (inputs ‸%4) (attrs) (outputs (%0 float32 ())))) (outputs)))", /value %4 is not defined before this use/);
  fails("(module (graph f (inputs (%0 x float32 ()) (‸%0 y float32 ())) (nodes) (outputs)))", /value %0 is defined twice/);
  fails('(module (graph f (inputs) (nodes (node fill (inputs) (attrs (s ‸"abc)) (outputs))) (outputs)))', /unterminated string/);
  fails('(module (graph f (inputs) (nodes (node fill (inputs) (attrs (s ‸"a\\qb")) (outputs))) (outputs)))', /malformed string/);
  fails("(module (graph f (inputs) (nodes (node fill (inputs) (attrs (s ‸abc)) (outputs))) (outputs)))", /expected an attribute value, found "abc" \(strings are written in double quotes\)/);
  fails("(module (graph f (inputs) (nodes (node fill (inputs) (attrs (s (‸set 1))) (outputs))) (outputs)))", /unknown attribute form \(set \.\.\.\)/);
  fails("(module (graph f (inputs) (nodes (node fill (inputs) (attrs (s 1 ‸2)) (outputs))) (outputs)))", /unexpected "2" at the end of an attribute/);
  fails("(module (graph f (inputs) (nodes (node fill (inputs) (attrs (a 1) (‸a 2)) (outputs))) (outputs)))", /attribute "a" is given twice/);
  fails("(module (graph f (inputs) (nodes (node fill (inputs) (attrs (s (typed ‸Float16Array 1))) (outputs))) (outputs)))", /unknown typed array type "Float16Array"/);
  fails('(module (graph f (inputs) (nodes (node fill (inputs) (attrs (v ‸(variable "w" 7))) (outputs))) (outputs)))', /variable "w" \(id 7\) cannot be resolved: pass options.variables/);
  fails('(module (graph f (inputs) (nodes (node fill (inputs) (attrs (v ‸(variable "w" 7))) (outputs))) (outputs)))', /cannot be resolved/, { variables: new Map() });
  fails('(module (graph f (inputs) (nodes (node fill (inputs) (attrs (v (variable "w" ‸x))) (outputs))) (outputs)))', /expected the variable's integer id/);
  fails("(module (graph f (inputs) (nodes) (outputs)) (‸graph g (inputs) (nodes) (outputs)))", /expected \(function \.\.\.\), found a \(graph \.\.\.\) form/);
  fails("(module (graph f (inputs) (nodes) (outputs) ‸extra))", /unexpected "extra" at the end of a graph/);
  fails("(module (graph f (inputs) (‸outputs)))", /expected \(nodes \.\.\.\), found a \(outputs \.\.\.\) form/);
  fails("(module (graph f (inputs) (nodes)‸))", /expected \(outputs \.\.\.\) before "\)"/);
  fails("(module (graph f (inputs) (nodes) (outputs)) (function g (inputs) (nodes) (outputs)) (function ‸g (inputs) (nodes) (outputs)))", /function g is defined twice/);
  fails("(module) ‸(module)", /unexpected text after \(module \.\.\.\)/);
  fails("(module (graph f ; a comment (\n (inputs) (nodes) (outputs)) ‸x)", /expected \(function \.\.\.\), found "x"/);
  // Comments and extra whitespace are fine.
  const parsed = parseSExpr("; a graph\n(module (graph f ; name\n  (inputs) (nodes) (outputs)))\n");
  assert.equal(parsed.graph.name, "f");
});

// ---- graphs from staging -----------------------------------------------------------------

test("staged graphs print and round-trip: ops, cond, whileLoop, variables and calls", () => {
  const f = sc.stage((x: sc.Tensor) => sc.relu(x).add(1));
  const cf = f.concrete(sc.ones([2]));
  assert.equal(
    printGraph(cf.graph),
    [
      "graph staged(%0 arg0: float32[2]) -> (output_0: float32[2]) {",
      "  %1: float32[2] = relu(%0)",
      '  %2: float32[] = fill() {shape: [], dtype: "float32", value: 1}',
      "  %3: float32[2] = add(%1, %2)",
      "  return %3",
      "}",
    ].join("\n"),
  );
  verifyGraph(cf.graph, cf.library);
  roundTrip(cf.graph, cf.library);
  assert.equal(cf.toSExpr(), toSExpr(cf.graph, cf.library));

  const v = sc.variable(sc.zeros([3]), { name: "state" });
  const inner = sc.stage(function inner(x: sc.Tensor) {
    return sc.relu(x).mul(2);
  });
  const outer = sc.stage(function outer(x: sc.Tensor, n: sc.Tensor) {
    const y = sc.cond(x.sum().greater(0), () => x.mul(2), () => x.neg());
    const [, acc] = sc.whileLoop((i, _a) => i.less(n), (i, a) => [i.add(1), a.add(y)], [sc.zeros([], "int32"), v.read()]);
    v.assign(acc!);
    return inner(acc!);
  });
  const co = outer.concrete(sc.ones([3]), sc.tensor(3, "int32"));
  verifyGraph(co.graph, co.library);
  const text = co.toString();
  assert.match(text, /= cond\(/);
  assert.match(text, /= while\(/);
  assert.match(text, /= readVariable\(\) \{variable: state\}/);
  assert.match(text, /assignVariable\(%\d+\) \{variable: state\}/);
  assert.match(text, /call @inner\(/);
  assert.match(text, /\nfunction inner\(|\ngraph inner\(/);
  const parsed = roundTrip(co.graph, co.library, new Map([[v.variableId, v]]));
  verifyGraph(parsed.graph, parsed.library);
});
