/** Starting every rank from the same weights, and writing files from one rank. */
import { ValueError } from "../core/errors.js";
import { Variable } from "../core/variable.js";
import { withoutRecorders } from "../core/context.js";
import { broadcast } from "../ops/collective.js";
import { save } from "../io/checkpoint.js";
import { collectiveProvider } from "../ops/collective.js";

/** Something holding variables: a Module (`variables()`), an optimizer, or a list of variables. */
export type VariableSource = readonly Variable[] | { variables(): Variable[] };

/**
 * Sets every variable to rank `root`'s value (default 0) on every rank: call it after building
 * the model (and before training) so all ranks start from the same weights. Every rank must pass
 * the same variables in the same order.
 */
export function broadcastVariables(source: VariableSource, root = 0): void {
  const vars = Array.isArray(source) ? source : typeof (source as { variables?: unknown }).variables === "function" ? (source as { variables(): Variable[] }).variables() : null;
  if (!vars) throw new ValueError(`takes a module, an optimizer or a list of variables`, "distributed.broadcastVariables");
  vars.forEach((v, i) => {
    if (!(v instanceof Variable)) throw new ValueError(`item ${i} is not a Variable`, "distributed.broadcastVariables");
  });
  withoutRecorders(null, () => {
    for (const v of vars) v.assign(broadcast(v.peek(), root));
  });
}

/**
 * `sc.io.save` on rank 0 only (the chief): ranks hold the same weights, so one file is written,
 * not one per rank racing for the path. Returns whether this rank wrote it.
 */
export function saveOnChief(root: unknown, path: string): boolean {
  const p = collectiveProvider();
  if (p && p.rank !== 0) return false;
  save(root, path);
  return true;
}
