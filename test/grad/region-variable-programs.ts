/**
 * Programs for the region-variable gradient sweep (test/grad/region-variables.test.ts): every
 * structural construct (cond, whileLoop, scan, a converted for...of and if, a call to a staged
 * helper, recursion, regions nested in regions) over a parameter θ that reaches the construct's
 * region in one of three ways:
 *
 * - "variable read inside": the region reads a Variable itself (the region's trace reads it);
 * - "variable read outside": the Variable is read before the construct, and the region
 *   captures the tensor read;
 * - "watched tensor": a tensor the tape watches (an eager tensor the function closes over, or
 *   sc.grad's argument) is captured by the region.
 *
 * Each program is a scalar loss of x (float64 [3, 2]) and θ (float64 [2]).
 */
import * as sc from "../../src/api/index.js";

export type Access = "variable read inside" | "variable read outside" | "watched tensor";
export const accesses: Access[] = ["variable read inside", "variable read outside", "watched tensor"];

/**
 * How a program's region gets θ: `th()` inside the region. `prepare()` runs once at the top of
 * the loss, before the construct (it reads the variable there for "variable read outside").
 * Helpers (staged functions of their own) get θ through `helperTheta`: the variable itself, the
 * tensor passed as an argument, or the closed-over tensor.
 */
export interface ThetaSource {
  access: Access;
  th: () => sc.Tensor;
  /** th() is the tensor the staged helpers close over (otherwise they take θ as an argument). */
  closedOver?: boolean;
}

export interface RegionProgram {
  name: string;
  /** The loss: `theta` gives θ inside the construct's region. */
  loss(x: sc.Tensor, theta: ThetaSource): sc.Tensor;
}

const sum = (t: sc.Tensor) => sc.sum(t);
const row = (x: sc.Tensor, i: sc.Tensor | number) => sc.gather(x, typeof i === "number" ? sc.scalar(i, "int32") : i, 0);
/** One recurrent step: tanh(h * θ + x_t). */
const step = (h: sc.Tensor, xt: sc.Tensor, th: sc.Tensor) => sc.tanh(h.mul(th).add(xt));

/** A converted for...of over x's rows (θ from the accessor, an argument so the function has no free variables but sc). */
const forOfLoss = sc.autograph(
  function forOfLoss(x: sc.Tensor, th: () => sc.Tensor) {
    let h = sc.mul(x, 0).sum(0);
    for (const xt of x as unknown as sc.Tensor[]) h = sc.tanh(h.mul(th()).add(xt));
    return sc.sum(h);
  },
  { scope: { sc } },
) as (x: sc.Tensor, th: () => sc.Tensor) => sc.Tensor;

/** A converted if on a tensor. */
const ifLoss = sc.autograph(
  function ifLoss(x: sc.Tensor, th: () => sc.Tensor) {
    let y;
    if ((sc.sum(x) as unknown as number) > 0) y = sc.sum(sc.tanh(x.mul(th())));
    else y = sc.sum(x.mul(th()).mul(th()));
    return y;
  },
  { scope: { sc } },
) as (x: sc.Tensor, th: () => sc.Tensor) => sc.Tensor;

/**
 * Staged helpers, one per way θ reaches them: reading the variable itself, θ as an argument, or
 * closing over the watched tensor. Made once (a staged function is reused across every tape
 * mode of the sweep, which is a seam of its own).
 */
export function makeHelpers(w: sc.Variable, p: sc.Tensor) {
  const body = (x: sc.Tensor, th: sc.Tensor) => sc.sum(sc.tanh(x.mul(th)).mul(x.cos()));
  const helper = {
    "variable read inside": sc.stage((x: sc.Tensor) => body(x, w.read()), { autograph: false, name: "helper_reads_w" }),
    "variable read outside": sc.stage((x: sc.Tensor, th: sc.Tensor) => body(x, th), { autograph: false, name: "helper_takes_theta" }),
    "watched tensor": sc.stage((x: sc.Tensor) => body(x, p), { autograph: false, name: "helper_closes_over_p" }),
  };
  /** Which helper a ThetaSource calls: the one reading w, the one closing over p, or the one taking θ. */
  const kind = (t: ThetaSource) => (t.access === "variable read inside" ? t.access : t.closedOver ? "watched tensor" : "variable read outside");
  const callHelper = (x: sc.Tensor, t: ThetaSource) => {
    const k = kind(t);
    return k === "variable read outside" ? helper[k](x, t.th()) : helper[k](x);
  };

  // Recursion: r(n, h) = n <= 0 ? sum(h * θ) : r(n - 1, tanh(h * θ + 0.1)), θ read in the
  // recursive function's cond branches.
  const spec = sc.spec([], "float64");
  type Rec = (n: sc.Tensor, h: sc.Tensor, th?: sc.Tensor) => sc.Tensor;
  const recursive = (theta: (th?: sc.Tensor) => sc.Tensor, name: string): Rec => {
    const r: Rec = sc.stage(
      (n: sc.Tensor, h: sc.Tensor, th?: sc.Tensor): sc.Tensor =>
        sc.cond(
          sc.lessEqual(n, 0),
          () => sc.sum(h.mul(theta(th))),
          () => r(n.sub(1), sc.tanh(h.mul(theta(th)).add(0.1)), th),
        ),
      { autograph: false, outputSignature: spec, name },
    );
    return r;
  };
  // ... and one reading θ after its recursive call: r(n, h) = n <= 0 ? sum(h) : r(n - 1, h * 0.9) * sum(tanh(h * θ)).
  const recursiveAfter = (theta: (th?: sc.Tensor) => sc.Tensor, name: string): Rec => {
    const r: Rec = sc.stage(
      (n: sc.Tensor, h: sc.Tensor, th?: sc.Tensor): sc.Tensor =>
        sc.cond(sc.lessEqual(n, 0), () => sc.sum(h), () => r(n.sub(1), h.mul(0.9), th).mul(sc.sum(sc.tanh(h.mul(theta(th)))))),
      { autograph: false, outputSignature: spec, name },
    );
    return r;
  };
  const recursions = (make: typeof recursive, suffix: string) => ({
    "variable read inside": make(() => w.read(), `recursion_reads_w${suffix}`),
    "variable read outside": make((th) => th!, `recursion_takes_theta${suffix}`),
    "watched tensor": make(() => p, `recursion_closes_over_p${suffix}`),
  });
  const calling = (rec: ReturnType<typeof recursions>) => (x: sc.Tensor, t: ThetaSource) => {
    const n = sc.scalar(2, "float64");
    const h = row(x, 0);
    const k = kind(t);
    return k === "variable read outside" ? rec[k](n, h, t.th()) : rec[k](n, h);
  };
  return { callHelper, callRecursion: calling(recursions(recursive, "")), callRecursionReadingAfter: calling(recursions(recursiveAfter, "_after")) };
}

export function regionPrograms(w: sc.Variable, p: sc.Tensor): RegionProgram[] {
  const { callHelper, callRecursion, callRecursionReadingAfter } = makeHelpers(w, p);
  return [
    {
      name: "cond",
      loss: (x, t) => sc.cond(sc.greater(sum(x), 0), () => sum(sc.tanh(x.mul(t.th()))), () => sum(x.mul(t.th()).mul(t.th()))),
    },
    {
      name: "cond (the other branch reads θ)",
      loss: (x, t) => sc.cond(sc.less(sum(x), 0), () => sum(x.exp()), () => sum(x.mul(t.th()).mul(t.th()))),
    },
    {
      name: "whileLoop",
      loss: (x, t) =>
        sum(
          sc.whileLoop(
            (i, h) => sc.logicalAnd(sc.less(i, 3), sc.less(sum(h!.square()), 50)),
            (i, h) => [i.add(1), step(h!, row(x, i), t.th())],
            [sc.scalar(0, "int32"), row(x, 0)],
          )[1]!,
        ),
    },
    {
      name: "scan",
      loss: (x, t) => sum(sc.scan((c, xt) => { const h = step(c[0]!, xt, t.th()); return [[h], h.mul(t.th())]; }, [row(x, 0).mul(0)], x)[1]),
    },
    { name: "converted for...of", loss: (x, t) => forOfLoss(x, t.th) },
    { name: "converted if", loss: (x, t) => ifLoss(x, t.th) },
    { name: "call to a staged helper", loss: (x, t) => callHelper(x, t).add(sum(x.mul(t.th()))) },
    {
      name: "call to a staged helper inside a cond branch",
      loss: (x, t) => sc.cond(sc.greater(sum(x), 0), () => callHelper(x, t), () => sum(x)),
    },
    {
      name: "call to a staged helper inside a whileLoop body",
      loss: (x, t) =>
        sum(sc.whileLoop((i) => sc.less(i, 2), (i, h) => [i.add(1), h!.mul(callHelper(x.mul(h!.sum()), t))], [sc.scalar(0, "int32"), row(x, 1)])[1]!),
    },
    { name: "recursion", loss: (x, t) => callRecursion(x, t) },
    { name: "recursion reading θ after its recursive call", loss: (x, t) => callRecursionReadingAfter(x, t) },
    {
      name: "whileLoop inside a cond branch",
      loss: (x, t) =>
        sc.cond(
          sc.greater(sum(x), 0),
          () => sum(sc.whileLoop((i) => sc.less(i, 3), (i, h) => [i.add(1), step(h!, row(x, i), t.th())], [sc.scalar(0, "int32"), row(x, 0)])[1]!),
          () => sum(x),
        ),
    },
    {
      name: "cond inside a whileLoop body",
      loss: (x, t) =>
        sum(
          sc.whileLoop(
            (i) => sc.less(i, 3),
            (i, h) => [i.add(1), sc.cond(sc.greater(sum(h!), 0), () => step(h!, row(x, i), t.th()), () => h!.mul(t.th()).sub(row(x, i)))],
            [sc.scalar(0, "int32"), row(x, 0)],
          )[1]!,
        ),
    },
  ];
}
