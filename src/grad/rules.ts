/**
 * Graph AD's rules for the structural ops, installed where the tracer asks for them
 * (staging/recording.ts). The package entry (api/) calls installGradientRules once.
 */
import { installStructuralGradientRules } from "../staging/recording.js";
import { condGradient } from "./cond-gradient.js";
import { whileGradient } from "./while-gradient.js";
import { callGradient } from "./call-gradient.js";
import { stagedFunctionGradient } from "./staged-function-gradient.js";

export function installGradientRules(): void {
  installStructuralGradientRules({
    cond: condGradient,
    while: whileGradient,
    call: (node) => (node.ctx === null ? stagedFunctionGradient(node.fn, node.args) : callGradient(node)),
  });
}
