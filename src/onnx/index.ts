/**
 * sc.onnx: ONNX in and out. load() imports a model as a staged function; the protobuf layer,
 * tensor conversion, builders and the onnxruntime helpers are the shared foundations of import
 * and export.
 */
export { load, type LoadOptions, type OnnxModel, type OnnxValueInfo, MIN_OPSET, MAX_OPSET, MIN_IR_VERSION, MAX_IR_VERSION } from "./import/load.js";
export { supportedOnnxOps } from "./import/op-table.js";
export { decode, encode, Messages, type ModelProto, type GraphProto, type NodeProto, type TensorProto } from "./protobuf.js";
export { readTensorProto, tensorToProto, DEFAULT_LIMITS, type TensorLimits } from "./tensor-proto.js";
export { ElemType, dtypeOfElemType, elemTypeOfDtype, elemTypeName } from "./dtypes.js";
export { OnnxError, OnnxDecodeError, OnnxModelError, OnnxUnsupportedError, OnnxExternalDataError, OnnxLimitError, OnnxRuntimeMissingError } from "./errors.js";
export { makeNode, makeGraph, makeModel, makeValueInfo, makeAttribute, modelBytes, type AttributeValue, type ModelOptions } from "./builders.js";
export { loadOnnxRuntime, hasOnnxRuntime, createSession, runSession, runOnnxRuntime, toOrtTensor, fromOrtTensor, type OrtSession } from "./ort.js";
export { mismatch, allClose, NODE_TEST_TOLERANCE, MODEL_TOLERANCE, type Tolerance } from "./compare.js";
export { runConformance, runCase, listCases, formatReport, type CaseResult, type ConformanceReport, type ConformanceOptions } from "./conformance.js";
export { exportFunction, exportModel, EXPORT_OPSET, EXPORT_IR_VERSION, type ExportOptions, type ExportedModel } from "./export/export.js";
export { onnxruntimeExecutor, installEngine, engineStats, type EngineOptions } from "./engine.js";
