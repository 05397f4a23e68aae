/**
 * The few tensor operations the model workloads use, once for Stagecraft and once for tfjs, so
 * that each model is written once and every system runs the same computation (the same
 * weights, the same inputs). Each side is the library's own idiomatic call.
 */
import * as sc from "../../src/api/index.js";
import { tf } from "./systems.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type T = any;

export interface Lib {
  name: string;
  tensor(data: Float32Array, shape: number[]): T;
  matmul(a: T, b: T): T;
  add(a: T, b: T | number): T;
  sub(a: T | number, b: T | number): T;
  mul(a: T, b: T | number): T;
  tanh(a: T): T;
  exp(a: T): T;
  relu(a: T): T;
  sum(a: T, axis?: number): T;
  mean(a: T): T;
  minimum(a: T, b: number): T;
  less(a: T, b: T): T;
  where(c: T, a: T, b: T): T;
  expandDims(a: T, axis: number): T;
  unstack(a: T): T[];
  normal(shape: number[]): T;
  uniform(shape: number[]): T;
  /** Gradients of scalar f with respect to `params` (as a training step takes them). */
  grads(f: (...params: T[]) => T, params: T[]): T[];
  /** Images given as NCHW values, held in the library's own layout (tfjs: NHWC, as its models hold them). */
  images(data: Float32Array, nchw: number[]): T;
  /** A filter given as [out, in, k, k] values, held in the library's own layout (tfjs: [k, k, in, out]). */
  filter(data: Float32Array, oikk: number[]): T;
  /** Convolution with 'same' padding of images and a filter in the library's layouts. */
  conv(x: T, w: T, stride: number): T;
  /** Mean over the spatial axes: images -> [N, C]. */
  spatialMean(x: T): T;
  logSoftmax(x: T): T;
}

export const scLib: Lib = {
  name: "stagecraft",
  tensor: (d, s) => sc.tensor(d, "float32", s),
  matmul: (a, b) => sc.matmul(a, b),
  add: (a, b) => sc.add(a, b),
  sub: (a, b) => sc.sub(a, b),
  mul: (a, b) => sc.mul(a, b),
  tanh: (a) => sc.tanh(a),
  exp: (a) => sc.exp(a),
  relu: (a) => sc.relu(a),
  sum: (a, axis) => sc.sum(a, axis),
  mean: (a) => sc.mean(a),
  minimum: (a, b) => sc.minimum(a, b),
  less: (a, b) => sc.less(a, b),
  where: (c, a, b) => sc.where(c, a, b),
  expandDims: (a, axis) => sc.expandDims(a, axis),
  unstack: (a) => sc.unstack(a, 0),
  normal: (shape) => sc.random.normal(shape),
  uniform: (shape) => sc.random.uniform(shape),
  grads: (f, params) => sc.grad(f, { argnums: params.map((_, i) => i) })(...params) as T[],
  images: (d, s) => sc.tensor(d, "float32", s),
  filter: (d, s) => sc.tensor(d, "float32", s),
  conv: (x, w, stride) => sc.conv2d(x, w, { strides: stride, padding: "same" }),
  spatialMean: (x) => sc.mean(x, [2, 3]),
  logSoftmax: (x) => sc.logSoftmax(x, -1),
};

export const tfLib: Lib = {
  name: "tfjs",
  tensor: (d, s) => tf.tensor(d, s, "float32"),
  matmul: (a, b) => tf.matMul(a, b),
  add: (a, b) => tf.add(a, b),
  sub: (a, b) => tf.sub(a, b),
  mul: (a, b) => tf.mul(a, b),
  tanh: (a) => tf.tanh(a),
  exp: (a) => tf.exp(a),
  relu: (a) => tf.relu(a),
  sum: (a, axis) => tf.sum(a, axis),
  mean: (a) => tf.mean(a),
  minimum: (a, b) => tf.minimum(a, b),
  less: (a, b) => tf.less(a, b),
  where: (c, a, b) => tf.where(c, a, b),
  expandDims: (a, axis) => tf.expandDims(a, axis),
  unstack: (a) => tf.unstack(a, 0),
  normal: (shape) => tf.randomNormal(shape),
  uniform: (shape) => tf.randomUniform(shape),
  grads: (f, params) => tf.grads(f)(params),
  // tfjs holds images NHWC and filters [k, k, in, out]: the values are converted once, when made
  images: (d, s) => tf.tidy(() => tf.transpose(tf.tensor(d, s, "float32"), [0, 2, 3, 1])),
  filter: (d, s) => tf.tidy(() => tf.transpose(tf.tensor(d, s, "float32"), [2, 3, 1, 0])),
  conv: (x, w, stride) => tf.conv2d(x, w, stride, "same"),
  spatialMean: (x) => tf.mean(x, [1, 2]),
  logSoftmax: (x) => tf.logSoftmax(x, -1),
};
