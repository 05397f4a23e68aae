/**
 * `sc.nn`: modules (Module, Sequential), layers, initializers, losses, metrics, `fit` (with callbacks), `evaluate` and `predict`.
 * See module.ts for how modules track their state.
 */
export { Module } from "./module.js";
export { Sequential } from "./layers/sequential.js";
export { Linear, Flatten, Activation, ReLU, Tanh, Sigmoid, GELU, Softmax, LogSoftmax, type LinearOptions } from "./layers/linear.js";
export { Conv1d, Conv2d, ConvTranspose2d, MaxPool2d, AvgPool2d, type Conv1dLayerOptions, type Conv2dLayerOptions, type ConvTranspose2dLayerOptions } from "./layers/conv.js";
export { BatchNorm, LayerNorm, GroupNorm, type BatchNormOptions, type LayerNormOptions, type GroupNormOptions } from "./layers/normalization.js";
export { Dropout, type DropoutOptions } from "./layers/dropout.js";
export { Embedding, type EmbeddingOptions } from "./layers/embedding.js";
export { LSTMCell, GRUCell, LSTM, GRU, type RecurrentOptions, type SequenceOptions } from "./layers/recurrent.js";
export { MultiHeadAttention, type AttentionOptions } from "./layers/attention.js";
export { TransformerEncoderLayer, TransformerDecoderLayer, type TransformerLayerOptions, type TransformerDecoderLayerOptions, type DecoderMasks } from "./layers/transformer.js";
export type { WeightOptions } from "./layers/options.js";
export * as init from "./init.js";
export type { Initializer, Fans } from "./init.js";
export { softmaxCrossEntropy, binaryCrossEntropyWithLogits, mse, huber, l1, mae, nll, klDivergence, cosineSimilarity, type Reduction, type LossOptions, type CrossEntropyOptions, type HuberOptions, type BinaryCrossEntropyOptions } from "./losses.js";
export { accuracy, Mean, topKAccuracy, precision, recall, f1, Precision, Recall, F1, meanAbsoluteError, meanSquaredError, type TopKOptions, type ClassificationMetricOptions, type CountingMetric } from "./metrics.js";
export { fit, type FitOptions, type FitCallbacks, type FitControl, type History, type Logs, type BatchFunction, type Metric, type ClassWeight } from "./fit.js";
export { evaluate, predict, type EvaluateOptions, type PredictOptions } from "./evaluate.js";
export { Callback, EarlyStopping, TerminateOnNaN, ModelCheckpoint, ReduceLROnPlateau, type EarlyStoppingOptions, type ModelCheckpointOptions, type ReduceLROnPlateauOptions } from "./callbacks.js";
export { Progress, type ProgressOptions } from "./progress.js";
export { saveModel, loadModel } from "./save-model.js";
export { registerLayer, ModelConfigError, UnknownLayerError } from "./model-config.js";
