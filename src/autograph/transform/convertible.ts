/**
 * What the transform cannot convert: async functions and generators (their bodies run after
 * the call returns), constructors, getters and setters, methods using `super`, and `with`
 * statements. Such a function is left as it is (the loader gives it no twin; `sc.autograph`
 * returns it, or says why).
 */
import * as t from "./build.js";
import { walk } from "./ast.js";
import { ConversionError, type ConversionLocation } from "./errors.js";

/** Why a function cannot be converted (async, generator, constructor...), or null. */
export function unconvertibleReason(fn: t.Function): string | null {
  if (fn.async && fn.generator) return "async generator functions are left unconverted";
  if (fn.async) return "async functions are left unconverted";
  if (fn.generator) return "generator functions are left unconverted";
  if ((fn.type === "ClassMethod" || fn.type === "ObjectMethod" || fn.type === "ClassPrivateMethod") && fn.kind !== "method") {
    return `${fn.kind === "constructor" ? "constructors" : "getters and setters"} are not converted`;
  }
  return null;
}

/** Throws a ConversionError for a `with` statement in `fn`'s own body (nested functions aside). */
export function checkStatements(fn: t.Function, filename: string): void {
  walk(fn, (n) => {
    if (n !== fn && (t.isFunction(n) || t.isClass(n))) return false;
    if (n.type === "WithStatement") {
      const where: ConversionLocation = { file: filename, line: n.loc?.start.line ?? 0, column: n.loc?.start.column ?? 0 };
      throw new ConversionError("`with` statements cannot be converted", where);
    }
    return undefined;
  });
}
