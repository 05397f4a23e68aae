/**
 * The AutoGraph runtime: `ag`, the one object converted code calls into (see
 * docs/autograph.md for the contract with the source transform).
 */
import { ifStmt, ifExp, whileStmt, forOf, range, RangeObject, dispatchCondition, type LoopOptions } from "./control-flow.js";
import { and, or, nullish, not, switchValue } from "./logical.js";
import { add, sub, mul, div, mod, pow, neg, pos, increment, toNumeric, lt, le, gt, ge, eq, ne, looseEq, looseNe } from "./arithmetic.js";
import { bitOr, bitAnd, bitXor, shl, shr, bitNot } from "./bitwise.js";
import { getItem, setItem, slice, SliceSpec, dimSize } from "./indexing.js";
import { call, callee, registerConverted, getConverted, isConvertedTwin, setConverter, setLibraryCheck, passArgumentsThrough, resolveCallee, doNotConvert, markLibrary, type Converter } from "./calls.js";
import { callMethod } from "./list-methods.js";
import { print, assertOrThrow, assert } from "./logging.js";
import { ret, retval } from "./returns.js";
import { math } from "./math.js";
import { AutoGraphError, AssertionFailedError, UNDEFINED, relaxShape, TensorList, tdz } from "./state.js";

export const ag = {
  // control flow
  ifStmt,
  ifExp,
  whileStmt,
  forOf,
  range,
  // logical
  and,
  or,
  nullish,
  not,
  switchValue,
  // arithmetic and comparison
  add,
  sub,
  mul,
  div,
  mod,
  pow,
  neg,
  pos,
  increment,
  toNumeric,
  lt,
  le,
  gt,
  ge,
  eq,
  ne,
  looseEq,
  looseNe,
  bitOr,
  bitAnd,
  bitXor,
  shl,
  shr,
  bitNot,
  // indexing
  getItem,
  setItem,
  slice,
  // calls
  call,
  callee,
  callMethod,
  registerConverted,
  getConverted,
  setConverter,
  // logging and assertions
  print,
  assertOrThrow,
  assert,
  // Math
  math,
  // returns
  ret,
  retval,
  // state
  UNDEFINED,
  tdz,
  relaxShape,
} as const;

markLibrary(ag, 0);
for (const k of Object.keys(math)) if (typeof math[k] === "function") doNotConvert(math[k]);

export type AG = typeof ag;

// Every operator is reached through `ag`; these are the names used on their own (by the
// transform's API, the public surface and tests), plus the classes the operators return.
export { range, registerConverted, getConverted, isConvertedTwin, setConverter, setLibraryCheck, passArgumentsThrough, assert, relaxShape };
export { RangeObject, SliceSpec, TensorList, dimSize, dispatchCondition, resolveCallee, doNotConvert, markLibrary, AutoGraphError, AssertionFailedError };
export type { LoopOptions, Converter };
