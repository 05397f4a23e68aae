/** Starting every rank from the same weights. */
import { ValueError } from "../core/errors.js";
import { Variable } from "../core/variable.js";
import { broadcastFromRoot } from "../nn/data-parallel.js";

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
  broadcastFromRoot(vars, root);
}
