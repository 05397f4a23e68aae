/** Whether `x` is a plain object (an object literal or Object.create(null)): a structure, not an instance. */
export function isPlainObject(x: unknown): x is Record<string, unknown> {
  if (x === null || typeof x !== "object") return false;
  const p = Object.getPrototypeOf(x);
  return p === Object.prototype || p === null;
}
