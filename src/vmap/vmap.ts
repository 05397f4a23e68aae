/**
 * sc.vmap(f, { inAxes, outAxes }): f written for one example, run on a batch. A transformation
 * on the context stack: each call pushes a handler whose batched values (BatchedTensor) carry
 * their batch axis; every op applied to one runs its batching rule (ops/batching.ts, declared
 * with the op) on the values below, under the handler that was current when vmap was called
 * (eager, a staging trace, an outer vmap), so vmap inside stage emits ordinary graph ops and
 * nested vmaps compose. Ops whose inputs are not batched at this level pass through.
 */
import { currentHandler, traceCallback, withHandler } from "../core/context.js";
import { ShapeError, ValueError } from "../core/errors.js";
import { checkOptions } from "../core/options.js";
import { mapStructure, type Structure } from "../core/structure.js";
import { Tensor } from "../core/tensor.js";
import { applyOp, getOp } from "../ops/registry.js";
import { BatchedTensor } from "./batched-tensor.js";
import { VmapLevel } from "./level.js";

export { BatchedTensor };

type Axes = number | null | Structure<number | null>[];
export interface VmapOptions {
  /** Per argument (or one for all): the batch axis of its leaves, or null for an unbatched argument. */
  inAxes?: Axes;
  /** Per output leaf structure (or one for all): where the batch axis goes in the result. */
  outAxes?: Axes;
}

const norm = (a: number, rank: number) => (a < 0 ? a + rank : a);

export function vmap<F extends (...args: any[]) => any>(f: F, options: VmapOptions = {}): (...args: Parameters<F>) => ReturnType<F> {
  checkOptions("vmap", options, ["inAxes", "outAxes"]);
  return ((...args: unknown[]) => {
    const inAxes = Array.isArray(options.inAxes) ? options.inAxes : args.map(() => options.inAxes ?? 0);
    if (inAxes.length !== args.length) throw new ValueError(`inAxes has ${inAxes.length} entries for ${args.length} arguments`, "vmap");
    const sizes: string[] = [];
    let size = -1;
    args.forEach((a, i) =>
      mapStructure(a as Structure<unknown>, (leaf, path) => {
        const ax = inAxes[i] as number | null;
        if (!(leaf instanceof Tensor) || ax === null) return leaf;
        const n = leaf.shape[norm(ax, leaf.rank)];
        if (n === undefined) throw new ShapeError(`argument ${i}${path} of shape [${leaf.shape.join(", ")}] has no axis ${ax}`, "vmap");
        sizes.push(`argument ${i}${path}: ${n}`);
        if (size < 0) size = n;
        else if (n !== size) throw new ShapeError(`the batch axes differ in size (${sizes.join(", ")})`, "vmap");
        return leaf;
      }),
    );
    if (size < 0) throw new ValueError("no argument is batched (every inAxes entry is null)", "vmap");
    const level = new VmapLevel(currentHandler(), size);
    const wrapped = args.map((a, i) => {
      const ax = inAxes[i] as number | null;
      return ax === null ? a : mapStructure(a as Structure<unknown>, (leaf) => (leaf instanceof Tensor ? new BatchedTensor(leaf, norm(ax, leaf.rank), level) : leaf));
    });
    // (f is converted by AutoGraph when a function staged with it calls vmap, as sc.grad's f is)
    const fn = traceCallback(f);
    const out = withHandler(level, () => fn(...wrapped));
    const outAx = options.outAxes ?? 0;
    return mapStructure(out as Structure<unknown>, (leaf) => {
      if (!(leaf instanceof Tensor)) return leaf;
      const ax = typeof outAx === "number" ? outAx : 0;
      const isMine = leaf instanceof BatchedTensor && leaf.level === level;
      let v = isMine ? (leaf as BatchedTensor).value : leaf;
      let d = isMine ? (leaf as BatchedTensor).dim : -1;
      if (d < 0) {
        v = applyOp(getOp("broadcastTo"), [applyOp(getOp("reshape"), [v], { shape: [1, ...v.shape] })[0]!], { shape: [size, ...v.shape] })[0]!;
        d = 0;
      }
      const target = norm(ax, v.rank);
      if (target === d) return v;
      const rest = v.shape.map((_, i) => i).filter((i) => i !== d);
      rest.splice(target, 0, d);
      return applyOp(getOp("transpose"), [v], { perm: rest })[0]!;
    }) as ReturnType<F>;
  }) as never;
}

