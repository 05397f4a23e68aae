/**
 * `console.log` and assertions. Eagerly `ag.print` is `console.log`; while a function is
 * staged it is a staged print (it logs each time the graph runs, with the tensors' run-time
 * values, formatting JS values as console.log does). `if (c) throw e` on a tensor condition
 * and `ag.assert(ok, message)` become an `assert` node that throws when the graph runs.
 */
import { inspect, format } from "node:util";
import { Tensor } from "../../core/tensor.js";
import { ShapeError, ValueError, userLocation } from "../../core/errors.js";
import { fmtShape } from "../../core/shape.js";
import { applyOp, defineOp } from "../../ops/registry.js";
import { logicalNot } from "../../ops/compare.js";
import { print as stagedPrint } from "../../staging/host.js";
import { AssertionFailedError, activeTrace, locArg, readIfVariable } from "./state.js";
import { concreteTruth, symbolicPredicate, truthyTensor } from "./logical.js";

/** `console.log(...args)`. */
export function print(...args: unknown[]): void {
  if (!activeTrace()) {
    console.log(...args);
    return;
  }
  const hasTensor = args.some((a) => a instanceof Tensor);
  if (!hasTensor) {
    stagedPrint(format(...args));
    return;
  }
  stagedPrint(...args.map((a) => (a instanceof Tensor || typeof a === "string" ? a : inspect(a))));
}

// ---------------------------------------------------------------------------------------------
// assertions

const errorFactories = new Map<number, () => unknown>();
let nextFactoryId = 1;

/** Throws the registered error when its input (a bool scalar: "ok") is false. */
export const assertOp = defineOp<{ fnId: number; message: string }>({
  name: "assert",
  family: "host",
  inputs: ["ok"],
  stateful: true,
  infer(inputs) {
    const ok = inputs[0]!;
    if (ok.dtype !== "bool" || !ok.shape.every((d) => d === 1)) {
      throw new ShapeError(`the condition must be a bool scalar, got ${ok.dtype}${fmtShape(ok.shape)}`, "assert");
    }
    return [];
  },
  kernels: { cpu(inputs, attrs) {
    if (inputs[0]!.dataSync()[0] !== 0) return [];
    const make = errorFactories.get(attrs.fnId);
    if (!make) throw new AssertionFailedError(attrs.message || "assertion failed", "assert", null);
    throw make();
  } },
});

function stageAssert(ok: Tensor, makeError: () => unknown, message: string): void {
  const fnId = nextFactoryId++;
  errorFactories.set(fnId, makeError);
  applyOp(assertOp, [ok], { fnId, message });
}

/**
 * `if (cond) throw makeError()`. With a symbolic condition the throw happens when the graph
 * runs (`makeError` is called then).
 */
export function assertOrThrow(cond: unknown, makeError: () => unknown, loc?: string | null): void {
  if (!(cond instanceof Tensor)) {
    if (cond) throw makeError();
    return;
  }
  const t = readIfVariable(cond) as Tensor;
  if (!t.isSymbolic) {
    if (concreteTruth(t, "throw", loc)) throw makeError();
    return;
  }
  if (!activeTrace()) t.concrete("use as a condition of");
  stageAssert(logicalNot(symbolicPredicate(t, "throw", loc)), makeError, "");
}

/**
 * `ag.assert(ok, message)` (sc.assert): throws an AssertionFailedError with `message` (a
 * string, or a function returning one, called only on failure) when `ok` is false; staged,
 * when the graph runs.
 */
export function assert(ok: unknown, message?: string | (() => string), loc?: string | null): void {
  const text = () => (typeof message === "function" ? message() : (message ?? "assertion failed"));
  const where = locArg(loc) ?? userLocation();
  const makeError = () => new AssertionFailedError(text(), "assert", where);
  if (!(ok instanceof Tensor)) {
    if (!ok) throw makeError();
    return;
  }
  const t = readIfVariable(ok) as Tensor;
  if (!t.isSymbolic) {
    if (!concreteTruth(t, "assert", loc)) throw makeError();
    return;
  }
  if (!activeTrace()) t.concrete("use as a condition of");
  if (message !== undefined && typeof message !== "string" && typeof message !== "function") {
    throw new ValueError(`the message must be a string or a function returning one`, "assert");
  }
  stageAssert(truthyTensor(symbolicPredicate(t, "assert", loc)), makeError, typeof message === "string" ? message : "");
}
