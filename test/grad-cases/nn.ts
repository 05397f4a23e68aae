/** Gradient cases for the nn family (ops/nn.ts). */
import * as sc from "../../src/api/index.js";
import type { GradCase } from "./types.js";

export const cases: GradCase[] = [
];
