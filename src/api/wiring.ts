/**
 * The explicit wiring of the layers, in one place: what each layer leaves open for a higher one
 * to install. The package entry (index.ts) calls `wire()` once; importing any other module
 * installs nothing.
 *
 * - staging runs graph functions on the executor the configuration asks for (exec/executor.ts:
 *   the compiled executor, or STAGECRAFT_EXECUTOR=interpret's interpreter);
 * - the engines `stage(fn, { engine })` may ask for by name: "onnxruntime" (onnx/engine.ts),
 *   "stagecraft" (the default executor by name) and "auto" (onnx/partition/auto.ts, behind the
 *   determinism switch: partition/gate.ts), and the default engine: "auto" where
 *   onnxruntime-node is installed, else ours;
 * - what staged and concrete functions' toOnnx() calls: the ONNX exporter (onnx/export);
 * - stage() converts functions with AutoGraph first (autograph/api.ts convertForStage), and
 *   callbacks given to Stagecraft functions while such a function is traced (core/context.ts
 *   traceCallback: the way converted code's calls convert them, autograph/operators/calls.ts);
 * - graph AD's rules (grad/rules.ts): the gradient rules of cond, while and call, which the
 *   tracer hands those nodes to while tapes record, and the differentiator of host functions
 *   (ops/host.ts), which differentiates them with the eager tape;
 * - the CPU backend's native kernels (backends/cpu/native.ts): onnxruntime-node's products and
 *   convolutions (onnx/native-kernels.ts) when it loads; otherwise the WebAssembly kernels.
 */
import { installGradientRules } from "../grad/rules.js";
import { configuredExecutor } from "../exec/executor.js";
import { setDefaultExecutor, setEngine, setOnnxExporter } from "../staging/concrete-function.js";
import { onnxruntimeExecutor } from "../onnx/engine.js";
import { autoExecutor, oursByName } from "../onnx/partition/auto.js";
import { gatedAuto } from "../onnx/partition/gate.js";
import { onnxRuntimeInstalled } from "../onnx/sync-session.js";
import { exportModel } from "../onnx/export/export.js";
import { setBuiltInEngine, setStageConverter } from "../staging/stage.js";
import { convertForStage } from "../autograph/api.js";
import { installNativeKernels } from "../backends/cpu/native.js";
import { loadOrtNativeKernels } from "../onnx/native-kernels.js";
import { resolveCallee } from "../autograph/operators/calls.js";
import { setCallbackConverter } from "../core/context.js";
import { keepLargeHostBlocks } from "../core/platform/node.js";

let wired = false;

/** Installs the executor, the AutoGraph converter, graph AD's rules and the native kernels (once). */
export function wire(): void {
  if (wired) return;
  wired = true;
  setDefaultExecutor(configuredExecutor());
  // (onnxruntime-node is loaded when a function asking for the engine first runs)
  setEngine("onnxruntime", onnxruntimeExecutor());
  // ("stagecraft": our executor by name; "auto": ours, then per graph the faster of ours and the
  // graph cut into onnxruntime segments, by measurement: onnx/partition/)
  setEngine("stagecraft", oursByName());
  setEngine("auto", gatedAuto(autoExecutor(onnxruntimeExecutor()), oursByName()));
  // (the default engine: "auto" where onnxruntime-node is installed — found, not loaded: it loads
  // when a graph first gets warm — and our executor where it is not, as in browsers)
  setBuiltInEngine(onnxRuntimeInstalled() ? "auto" : null);
  // (staged and concrete functions' toOnnx())
  setOnnxExporter((cf, specs) => exportModel(cf, specs).bytes);
  setStageConverter((fn) => convertForStage(fn));
  setCallbackConverter(resolveCallee);
  installGradientRules();
  installNativeKernels(loadOrtNativeKernels());
  // (large tensors reuse glibc's heap instead of fresh page-faulted mappings: platform/node.ts)
  keepLargeHostBlocks();
}
