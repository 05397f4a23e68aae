/**
 * The functional transforms: grad, valueAndGrad, vjp, jvp, hvp, customGradient. Built on
 * GradientTape; a staged function they differentiate is differentiated as a program (the rules
 * of this folder).
 */
import { traceCallback, withoutRecorders } from "../core/context.js";
import { GradientError, ShapeError } from "../core/errors.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { Tensor, makeTensor } from "../core/tensor.js";
import { applyOp } from "../ops/registry.js";
import { customGradientOp, registerCustomFunction, rememberGradient, type CustomGradientResult } from "../ops/custom-gradient.js";
import { toTensor } from "../ops/convert.js";
import { zerosLikeTensor } from "../ops/fill.js";
import { GradientTape } from "../ad/tape.js";
import { leaves, mapStructure, type Structure } from "../core/structure.js";

export type { CustomGradientResult };

export type Argnums = number | number[] | "all";

export interface GradOptions {
  /** Which positional arguments to differentiate (default 0). */
  argnums?: Argnums;
}

const GRAD_OPTIONS = optionKeys<GradOptions>()("argnums");

function toLeafTensor(x: unknown): unknown {
  if (typeof x === "number") return makeTensor("grad", x);
  return x;
}

function selected(argnums: Argnums, n: number): number[] {
  if (argnums === "all") return Array.from({ length: n }, (_, i) => i);
  const list = typeof argnums === "number" ? [argnums] : argnums;
  for (const i of list) if (i < 0 || i >= n) throw new GradientError(`argnums ${i} is out of range for a call with ${n} arguments`, "grad");
  return list;
}

function checkScalar(y: unknown, op: string): Tensor {
  if (!(y instanceof Tensor)) throw new GradientError(`the function must return a tensor, got ${typeof y}`, op);
  if (y.size !== 1) throw new ShapeError(`the function must return a scalar (size-1) tensor to take its gradient, got shape [${y.shape.join(", ")}]; use vjp for non-scalar outputs`, op);
  return y;
}

/**
 * valueAndGrad(f)(...args) -> [f(...args), gradients]. Gradients have the structure of
 * the selected argument (or a list of them when argnums is a list or "all").
 */
export function valueAndGrad<Args extends any[]>(f: (...args: Args) => Tensor, options: GradOptions = {}) {
  checkOptions("grad", options, GRAD_OPTIONS);
  const argnums = options.argnums ?? 0;
  return (...rawArgs: Args): [Tensor, any] => {
    const which = selected(argnums, rawArgs.length);
    // Only the differentiated arguments become tensors; the others (JS numbers, arrays,
    // flags a staged function specializes on) reach f untouched, as in JAX.
    const args = rawArgs.map((a, i) => (which.includes(i) ? mapStructure(a as Structure<unknown>, toLeafTensor) : a)) as Args;
    const tape = new GradientTape();
    const y = tape.record(() => {
      for (const i of which) for (const leaf of leaves(args[i] as Structure<unknown>)) if (leaf instanceof Tensor) tape.watch(leaf);
      return checkScalar(traceCallback(f)(...args), "grad");
    });
    // An argument f does not use has a zero gradient, as in JAX: a function of it that is
    // constant in it (every argument is watched, so this is never a forgotten watch()).
    const grads = tape.gradient(y, which.map((i) => args[i]) as Structure<Tensor>, { unconnected: "zero" }) as unknown[];
    return [y, typeof argnums === "number" ? grads[0] : grads];
  };
}

/** grad(f)(...args): the gradient of a scalar-valued f with respect to the chosen arguments. */
export function grad<Args extends any[]>(f: (...args: Args) => Tensor, options: GradOptions = {}) {
  const vg = valueAndGrad(f, options);
  return (...args: Args): any => vg(...args)[1];
}

/**
 * vjp(f, ...primals) -> [outputs, backward]: backward(cotangents) returns the cotangent of
 * every primal. Outputs may be a tensor or a nested structure of tensors.
 */
export function vjp<Out extends Structure<Tensor>>(f: (...args: any[]) => Out, ...primals: any[]): [Out, (cotangent: Structure<Tensor>) => any[]] {
  const args = primals.map((a) => mapStructure(a as Structure<unknown>, toLeafTensor));
  const tape = new GradientTape({ persistent: true });
  const out = tape.record(() => {
    for (const a of args) for (const leaf of leaves(a as Structure<unknown>)) if (leaf instanceof Tensor) tape.watch(leaf);
    return traceCallback(f)(...args);
  });
  const backward = (cotangent: Structure<Tensor>): any[] => {
    const outs = leaves(out as Structure<Tensor>);
    const cts = leaves(cotangent);
    if (outs.length !== cts.length) throw new GradientError(`cotangent has ${cts.length} tensors but the function returned ${outs.length}`, "vjp");
    return tape.gradient(outs, args as Structure<Tensor>, { outputGradient: cts, unconnected: "zero" }) as any[];
  };
  return [out, backward];
}

/**
 * customGradient(f): f computes a value and supplies its own gradient. The forward runs
 * without recording; tapes (and staged gradients) use f's grad function as the VJP.
 */
export function customGradient<Args extends Tensor[]>(f: (...inputs: Args) => CustomGradientResult) {
  const checked = (...inputs: Tensor[]): CustomGradientResult => {
    const r = f(...(inputs as Args));
    return { value: r.value, grad: checkedCustomGradient(r.grad, inputs) };
  };
  const fnId = registerCustomFunction(checked);
  return (...inputs: Args): any => {
    const xs = inputs.map((x) => toTensor(x, "customGradient"));
    const result = withoutRecorders(null, () => checked(...xs));
    const values = Array.isArray(result.value) ? result.value : [result.value];
    const outs = applyOp(customGradientOp, [...xs, ...values], { fnId, numInputs: xs.length });
    rememberGradient(outs[0]!, result.grad);
    return Array.isArray(result.value) ? outs : outs[0];
  };
}

/** A custom gradient function whose gradients must have their inputs' shapes (another would broadcast silently). */
function checkedCustomGradient(grad: CustomGradientResult["grad"], inputs: Tensor[]): CustomGradientResult["grad"] {
  return (...cts) => {
    const g = grad(...cts);
    const list = Array.isArray(g) ? g : [g];
    list.forEach((gi, i) => {
      const x = inputs[i];
      if (!(gi instanceof Tensor) || x === undefined) return;
      const same = gi.rank === x.rank && gi.shape.every((d, j) => d === x.shape[j] || d < 0 || x.shape[j]! < 0);
      if (!same) {
        throw new GradientError(
          `the custom gradient returned a gradient of shape [${gi.shape.join(", ")}] for input ${i} of shape [${x.shape.join(", ")}]: each gradient must have its input's shape`,
          "customGradient",
        );
      }
    });
    return g;
  };
}

/**
 * Forward mode: jvp(f, primals, tangents) -> [f(primals), J·tangents].
 *
 * Computed by transposing the VJP: u -> vjp(f)(u) = Jᵀu is linear in u, so its own VJP with
 * cotangent t is J·t. Every registry op's VJP is itself differentiable, so this needs no
 * separate forward-mode rules, and it works through staged functions (whose VJPs are graphs).
 */
export function jvp<Out extends Structure<Tensor>>(f: (...args: any[]) => Out, primals: any[], tangents: any[]): [Out, any] {
  if (primals.length !== tangents.length) {
    throw new GradientError(`jvp got ${primals.length} primals but ${tangents.length} tangents`, "jvp");
  }
  const [out, back] = vjp(f, ...primals);
  const outLeaves = leaves(out as Structure<Tensor>);
  const u0 = outLeaves.map((o) => zerosLikeTensor(o));
  const [, backOfBack] = vjp((...us: Tensor[]) => back(us) as Structure<Tensor>, ...u0);
  const jt = backOfBack(tangents as Structure<Tensor>) as Tensor[];
  let k = 0;
  const tangentOut = mapStructure(out as Structure<Tensor>, () => jt[k++]!);
  return [out, tangentOut];
}

/**
 * Hessian-vector product of a scalar function by forward-over-reverse: the JVP of grad(f)
 * at x in direction v (x and v may be nested structures of tensors).
 */
export function hvp(f: (x: any) => Tensor, x: any, v: any): any {
  const [, hv] = jvp((y: any) => grad(f)(y), [x], [v]);
  return hv;
}
