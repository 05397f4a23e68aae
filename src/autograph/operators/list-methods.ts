/**
 * Array methods called on tensor lists from converted code (`ag.callMethod(xs, "map", ...)`).
 * A list's own methods (push, pop, at, slice) are called as they are. With a length known now,
 * the other non-mutating Array methods run on the array of its elements, exactly as on the
 * array the eager code has. With a length known only when the graph runs, `map` is staged as a
 * loop that builds a new list, and every other method is refused with an AutoGraphError naming
 * it (never a value computed on a wrong length).
 */
import { TensorList, listError } from "./state.js";
import { call, callMethod as plainCallMethod, resolveCallee } from "./calls.js";
import { stagedWhile } from "./staged-loop.js";
import { add, lt } from "./arithmetic.js";

type AnyFunction = (...args: any[]) => any;

/** Array methods that do not change the array: on a list of known length, run on its elements. */
const READ_ONLY = new Set([
  "map", "forEach", "filter", "reduce", "reduceRight", "some", "every", "find", "findIndex", "findLast", "findLastIndex",
  "flatMap", "flat", "indexOf", "lastIndexOf", "includes", "join", "concat", "entries", "keys", "values", "toReversed", "toSorted", "toSpliced", "with",
]);

/** What a list built in a staged construct supports when its length is known only when the graph runs. */
const SUPPORTED = "length, xs[i], xs.at(i), xs.slice(start, end), xs.map(f), xs.push(v), xs.pop(), for...of in converted code, and sc.stack(xs) / sc.concat(xs)";

/** `xs.map(f, thisArg)` over a list of unknown length: a staged loop pushing f(xs[i], i, xs) onto a new list. */
function stagedMap(list: TensorList, args: readonly unknown[]): unknown {
  const f = args[0];
  if (typeof f !== "function") throw new TypeError(`${String(f)} is not a function`);
  const g = resolveCallee(f as AnyFunction);
  const thisArg = args[1];
  const n = list.length;
  let out: unknown = [];
  let i: unknown = 0;
  stagedWhile({
    test: () => lt(i, n),
    body: () => {
      const v = Reflect.apply(g, thisArg, [list.get(i), i, list]);
      (out as unknown[]).push(v);
      i = add(i, 1);
    },
    getState: () => [out, i],
    setState: (vs) => ([out, i] = vs),
    names: ["the result of map", "the loop counter"],
    loc: null,
    opts: {},
    construct: "map",
  });
  return out;
}

/** `o[name](...args)` from converted code, with tensor lists' array methods (see the module comment). */
export function callMethod(o: unknown, name: PropertyKey, args: readonly unknown[] | (() => readonly unknown[])): unknown {
  if (!(o instanceof TensorList) || typeof name !== "string" || name in o) return plainCallMethod(o, name, args);
  const list = typeof args === "function" ? args() : args;
  if (o.lengthKnown && READ_ONLY.has(name)) {
    const elements = Array.from(o);
    return call((Array.prototype as unknown as Record<string, AnyFunction>)[name]!, elements, list);
  }
  if (name === "map") return stagedMap(o, list);
  const why = o.lengthKnown
    ? `it would change the list, which a staged construct holds as one tensor`
    : `its length is known only when the graph runs`;
  throw listError(`${name}() is not supported on a list built in a staged construct (${why}); supported: ${SUPPORTED}`);
}
