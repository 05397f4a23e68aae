/**
 * Neural-network ops: softmax, logSoftmax, conv2d, conv2dTranspose (and the registered
 * gradient op conv2dBackpropFilter), maxPool2d / avgPool2d (and their gradient ops), topK,
 * sort, argsort.
 *
 * Layouts: images are NCHW. conv2d filters are [outC, inC/groups, kH, kW]; conv2dTranspose
 * filters are [inC, outC/groups, kH, kW], as in PyTorch's ConvTranspose2d (the same tensor a
 * conv2d going the other way would use). Explicit padding is stored in attributes in ONNX order
 * [top, left, bottom, right]; "same" and "valid" are resolved when the op is called.
 *
 * Gradients close over registry ops, so derivatives of any order exist:
 *   conv2d            dx = conv2dTranspose(dy, w)        dw = conv2dBackpropFilter(x, dy)
 *   conv2dTranspose   dx = conv2d(dy, w)                 dw = conv2dBackpropFilter(dy, x)
 *   conv2dBackpropFilter(x, dy)   dx = conv2dTranspose(dy, g)   ddy = conv2d(x, g)
 *   maxPool2d         dx = maxPool2dGrad(x, dy)   (dy routed to each window's argmax)
 *   maxPool2dGrad     ddy = maxPool2dGradGrad(x, g)  (g read at each window's argmax); and back
 *   avgPool2d         dx = avgPool2dGrad(dy)          avgPool2dGrad's own VJP is avgPool2d
 *   topK, sort        dx = scatterAdd of dy at the selected / permuted positions (shape/gather.ts)
 * Sorting order everywhere: NaN the largest value (last ascending, first descending and in topK), ties in index order (stable).
 */
export * from "./nn/softmax.js";
export * from "./nn/conv.js";
export * from "./nn/pool.js";
export * from "./nn/sort.js";
export type { Padding2d } from "./nn/window.js";
