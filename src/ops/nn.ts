/** Neural-network ops: softmax, logSoftmax, conv2d, conv2dTranspose, pooling, topK, sort, argsort. */
export {};
