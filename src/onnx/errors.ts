/**
 * The ONNX layer's typed errors. Every failure to read, check or run an ONNX model is one of
 * these (or one of core/errors.ts's classes raised by an op while the model runs), never a
 * bare Error from a library below: the mutation fuzzer (test/onnx/fuzz.test.ts) holds us to it.
 */
import { StagecraftError } from "../core/errors.js";

/** Base class of the ONNX layer's errors; `op` is "onnx.load", "onnx.conformance", ... */
export class OnnxError extends StagecraftError {}

/** Bytes that are not a well-formed protobuf message of the expected type (truncated, corrupted). */
export class OnnxDecodeError extends OnnxError {}

/** A well-formed model that breaks ONNX's rules (dangling names, bad attributes, wrong counts). */
export class OnnxModelError extends OnnxError {}

/** An op, domain, opset, dtype or feature this importer does not handle (yet). */
export class OnnxUnsupportedError extends OnnxError {}

/** A tensor whose data lives in another file that cannot be read or is not allowed. */
export class OnnxExternalDataError extends OnnxError {}

/** A tensor or shape larger than the limits (LoadOptions.maxElements), refused before allocating. */
export class OnnxLimitError extends OnnxError {}

/** onnxruntime-node is not installed (it is an optional dependency). */
export class OnnxRuntimeMissingError extends OnnxError {}
