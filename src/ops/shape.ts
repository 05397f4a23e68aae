/**
 * Shape ops: views and rearrangements of data. reshape, broadcastTo, transpose, expandDims,
 * squeeze, concat, stack, unstack, split, slice (NumPy-style strided), gather, gatherND,
 * scatterAdd, pad, tile, flip, clip.
 *
 * All of them work for every dtype (clip: every dtype, bool included). Attributes are plain
 * JSON-able values normalized by the op functions (axes non-negative, perms complete); each
 * op's `infer` re-validates them so that graphs built by other front ends get the same errors.
 * Index tensors (gather, gatherND, scatterAdd) are int32/int64/uint8; negative indices are
 * NOT wrapped: an index outside 0..n-1 is an IndexError naming the index, where it is in the
 * index tensor, and the valid range.
 *
 * Unknown dims (staging with null inputSignature dims, shape entries -1): shape rules accept
 * them, propagate -1 where an output size depends on one, and leave size checks to the run-time
 * re-check with concrete shapes. Attributes keep a symbolic form the rules resolve against the
 * concrete shape (reshape's and split's -1, slice bounds as given, sliceGrad's -1 on whole
 * axes); where that is impossible (squeeze() without axes, split into n pieces or unstack of an
 * unknown axis, broadcastTo an unknown shape) the op function throws a ShapeError saying so.
 */
export * from "./shape/reshape.js";
export * from "./shape/join.js";
export * from "./shape/slice.js";
export * from "./shape/gather.js";
export * from "./shape/pad.js";
export * from "./shape/tile.js";
export * from "./shape/clip.js";
export * from "./shape/dim-size.js";
export { toIndexTensor, type AxisAttrs, type AxesAttrs } from "./shape/common.js";
