/** Gradient cases for the linalg family (ops/linalg.ts). */
import * as sc from "../../src/api/index.js";
import type { GradCase } from "./types.js";

export const cases: GradCase[] = [
];
