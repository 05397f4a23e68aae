/** All gradient cases, one file per op family. */
import type { GradCase } from "./types.js";
import { cases as elementwise } from "./elementwise.js";
import { cases as reduce } from "./reduce.js";
import { cases as shape } from "./shape.js";
import { cases as linalg } from "./linalg.js";
import { cases as nn } from "./nn.js";
import { cases as host } from "./host.js";
import { cases as addedForOnnx } from "./added-for-onnx.js";
import { cases as collective } from "./collective.js";

export const allCases: GradCase[] = [...elementwise, ...reduce, ...shape, ...linalg, ...nn, ...host, ...addedForOnnx, ...collective];
