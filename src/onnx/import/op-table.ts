/**
 * The table of ONNX ops the importer knows: each ONNX op (per domain) maps to a handler that
 * expresses it with Stagecraft's registry ops (through their public functions), so an
 * imported model is an ordinary staged program: differentiable, optimizable, exportable.
 * Handlers live in import/ops/*.ts, one file per family; importing import/ops/index.ts
 * registers them all.
 */
import type { Tensor } from "../../core/tensor.js";
import type { NodeContext } from "./node-context.js";
import type { Slot } from "./scope.js";
import type { NodeProto } from "../protobuf.js";

export type HandlerResult = Tensor | (Tensor | Slot | null)[];

export interface OnnxOpHandler {
  /** Inputs whose values must be known at trace time (shapes, axes, sizes, pads). */
  readonly constInputs?: readonly number[];
  /** Like constInputs, where which inputs must be known depends on the node (its attributes, its subgraphs' types). */
  readonly constInputsOf?: (node: NodeProto) => readonly number[];
  /** Oldest opset version whose semantics the handler implements (older: unsupported). */
  readonly since?: number;
  /** Never computed at trace time even on known inputs (random draws). */
  readonly random?: boolean;
  /** Takes or returns sequences/optionals (slots) rather than tensors only. */
  readonly slots?: boolean;
  run(n: NodeContext): HandlerResult;
}

/** Domains whose ops are the standard ONNX set. */
export const STANDARD_DOMAINS = new Set(["", "ai.onnx"]);

const table = new Map<string, OnnxOpHandler>();

const key = (domain: string, op: string): string => `${STANDARD_DOMAINS.has(domain) ? "" : domain}::${op}`;

/** Registers a handler for one or more op types (of the standard domain unless given). */
export function onnxOp(ops: string | readonly string[], handler: OnnxOpHandler, domain = ""): void {
  for (const op of typeof ops === "string" ? [ops] : ops) {
    const k = key(domain, op);
    if (table.has(k)) throw new Error(`ONNX op ${op} is handled twice`);
    table.set(k, handler);
  }
}

export function handlerFor(domain: string, op: string): OnnxOpHandler | undefined {
  return table.get(key(domain, op));
}

/** The op types handled, as "op" (standard domain) or "domain::op". */
export function supportedOnnxOps(): string[] {
  return [...table.keys()].map((k) => (k.startsWith("::") ? k.slice(2) : k)).sort();
}
