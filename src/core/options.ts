/**
 * Options objects of the public API are checked against the keys each one accepts: a misspelt
 * or foreign key (`maximumIterations` where the option is `maxIterations`) is a ValueError that
 * lists the known keys, never silently ignored. One validator serves every API; each API keeps
 * its list of keys beside its options type, and `optionKeys` makes the compiler check that the
 * list names every key of the type.
 */
import { ValueError } from "./errors.js";

/** Every key of `T`, as a list (the compiler rejects a list that misses one or adds another). */
export type OptionKeyList<T> = readonly (keyof T & string)[];

/**
 * `optionKeys<WhileOptions>()("maxIterations", "shapeInvariants")`: the keys of an options type,
 * checked complete at compile time (a key of the type missing from the list is a type error
 * that names it).
 */
export function optionKeys<T extends object>() {
  return <const K extends readonly (keyof T & string)[]>(
    ...keys: K & ([Exclude<keyof T & string, K[number]>] extends [never] ? unknown : { missingKeys: Exclude<keyof T & string, K[number]> })
  ): OptionKeyList<T> => keys;
}

/**
 * Checks an options argument: undefined, or a plain object whose own enumerable keys are all in
 * `known`. `api` names the function or constructor in the error ("whileLoop", "Adam").
 */
export function checkOptions(api: string, options: unknown, known: readonly string[]): void {
  if (options === undefined) return;
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new ValueError(`options must be an object, got ${describe(options)}`, api);
  }
  for (const key in options) {
    if (!Object.prototype.hasOwnProperty.call(options, key) || known.includes(key)) continue;
    throw unknownOption(api, key, known);
  }
}

function unknownOption(api: string, key: string, known: readonly string[]): ValueError {
  const guess = closest(key, known);
  const list = known.length > 0 ? `known options: ${known.join(", ")}` : `${api} takes no options`;
  return new ValueError(`unknown option ${JSON.stringify(key)}${guess ? ` (did you mean ${JSON.stringify(guess)}?)` : ""}; ${list}`, api);
}

function describe(x: unknown): string {
  if (x === null) return "null";
  if (Array.isArray(x)) return "an array";
  return typeof x === "string" ? `the string ${JSON.stringify(x)}` : `${typeof x} ${String(x)}`;
}

/** The known key nearest to `key` (edit distance, case ignored), when it is near enough to be a slip. */
function closest(key: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  const k = key.toLowerCase();
  for (const candidate of known) {
    const c = candidate.toLowerCase();
    // A known key contained in the given one or the reverse (maxIter / maxIterations) is a slip too.
    const d = k.includes(c) || c.includes(k) ? Math.abs(k.length - c.length) / 2 : editDistance(k, c);
    if (d < bestDistance) {
      bestDistance = d;
      best = candidate;
    }
  }
  return best !== null && bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : null;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * Checks an enum option: undefined (the default), or one of `choices`. A value outside them
 * (`progress: "none"` where the modes are "auto", "bar", "lines", "off") is a ValueError that
 * names the API and lists the choices, never taken as the default.
 */
export function checkChoice<T extends string>(api: string, name: string, value: unknown, choices: readonly T[]): T | undefined {
  if (value === undefined || (choices as readonly unknown[]).includes(value)) return value as T | undefined;
  const guess = typeof value === "string" ? closest(value, choices) : null;
  throw new ValueError(`${name} must be one of ${choices.map((c) => JSON.stringify(c)).join(", ")}, got ${describe(value)}${guess ? ` (did you mean ${JSON.stringify(guess)}?)` : ""}`, api);
}

/**
 * Checks a size or count limit: an integer of at least `least` (0 or 1), or Infinity for no
 * limit. NaN, negatives and fractions are a ValueError naming the option, never a limit silently
 * switched off (the ONNX importer's load limits and a worker's limits follow this one rule).
 */
export function checkLimit(api: string, name: string, value: unknown, least: 0 | 1): number {
  if (value === Infinity || (typeof value === "number" && Number.isSafeInteger(value) && value >= least)) return value;
  const kind = least === 0 ? "non-negative" : "positive";
  throw new ValueError(`${name} must be a ${kind} integer (or Infinity: no limit), got ${typeof value === "number" ? String(value) : (JSON.stringify(value) ?? String(value))}`, api);
}
