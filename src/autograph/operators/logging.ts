/**
 * `console.log` and assertions. Eagerly `ag.print` is `console.log`; while a function is
 * staged it is a staged print (it logs each time the graph runs, with the tensors' run-time
 * values, formatting JS values as console.log does). `if (c) throw e` on a tensor condition
 * and `ag.assert(ok, message)` become an `assert` node that throws when the graph runs.
 */
import { inspect, format } from "../../core/platform/node.js";
import { Tensor } from "../../core/tensor.js";
import { ValueError, userLocation } from "../../core/errors.js";
import { applyOp } from "../../ops/registry.js";
import { assertOp, registerAssertion } from "../../ops/host.js";
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

function stageAssert(ok: Tensor, makeError: () => unknown, message: string): void {
  applyOp(assertOp, [ok], { fnId: registerAssertion(makeError), message });
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
