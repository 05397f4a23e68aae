import { isPlainObject } from "./objects.js";

/** Nested structures (arrays and plain objects) of leaves, as JAX pytrees / TF nests. */
export type Structure<T> = T | Structure<T>[] | { [k: string]: Structure<T> };

/** Maps every leaf (anything that is not an array or plain object). */
export function mapStructure<A, B>(s: Structure<A>, fn: (leaf: A, path: string) => B, path = ""): Structure<B> {
  if (Array.isArray(s)) return s.map((x, i) => mapStructure(x, fn, `${path}[${i}]`));
  if (isPlainObject(s)) {
    const out: Record<string, Structure<B>> = {};
    for (const k of Object.keys(s)) out[k] = mapStructure((s as Record<string, Structure<A>>)[k]!, fn, path ? `${path}.${k}` : k);
    return out;
  }
  return fn(s as A, path);
}

export function leaves<A>(s: Structure<A>): A[] {
  const out: A[] = [];
  mapStructure(s, (x) => {
    out.push(x);
    return null;
  });
  return out;
}
