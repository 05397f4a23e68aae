/** Every op family; importing this module registers the whole op set. */
export * from "./creation.js";
export * from "./unary.js";
export * from "./binary.js";
export * from "./compare.js";
export * from "./where.js";
export * from "./cast.js";
export * from "./identity.js";
export * from "./reduce.js";
export * from "./shape.js";
export * from "./linalg.js";
export * from "./nn.js";
export * as random from "./random.js";
export * from "./numerics.js";
export * from "./iteration-stack.js";
import "./residuals.js";
import "./variable-updates.js";
export { getOp, listOps, applyOp, defineOp, type OpDef, type TensorType, type VjpContext } from "./registry.js";
