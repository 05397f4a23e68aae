/**
 * Row-major index arithmetic for the tests' naive reference implementations (written
 * independently of the library, so that they check it rather than repeat it).
 */

export function strides(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i]!;
  }
  return s;
}

export function size(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** The multi-index of flat position i. */
export function unravel(i: number, shape: readonly number[]): number[] {
  const idx = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    idx[d] = i % shape[d]!;
    i = Math.floor(i / shape[d]!);
  }
  return idx;
}

/** The flat position of a multi-index. */
export function ravel(idx: readonly number[], shape: readonly number[]): number {
  const st = strides(shape);
  return idx.reduce((a, v, d) => a + v * st[d]!, 0);
}
