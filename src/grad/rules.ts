/**
 * Graph AD's rules, installed where the layers below leave them open: on the declarations of
 * the structural ops (cond, while, call: the gradient slot the tracer asks, staging/recording.ts)
 * and as the differentiator of host functions (ops/host.ts). The package entry (api/wiring.ts)
 * calls installGradientRules once.
 */
import { callOp, condOp, whileOp } from "../ops/structural.js";
import { setHostDifferentiator } from "../ops/host.js";
import type { CallNode, CondNode, GradientRule, WhileNode } from "../staging/recording.js";
import { condGradient } from "./cond-gradient.js";
import { whileGradient } from "./while-gradient.js";
import { callGradient } from "./call-gradient.js";
import { stagedFunctionGradient } from "./staged-function-gradient.js";
import { differentiateHostFunction } from "./host-function-gradient.js";

const callRule: GradientRule<CallNode> = (node) => (node.ctx === null ? stagedFunctionGradient(node.fn, node.args) : callGradient(node));

export function installGradientRules(): void {
  condOp.gradient = condGradient satisfies GradientRule<CondNode>;
  whileOp.gradient = whileGradient satisfies GradientRule<WhileNode>;
  callOp.gradient = callRule;
  setHostDifferentiator(differentiateHostFunction);
}
