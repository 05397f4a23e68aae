/**
 * mulberry32, the library's own seeded generator (src/data/rng.ts, which imports nothing: the
 * fuzzer's generator may use it without loading the library).
 */
export { mulberry32 } from "../../src/data/rng.js";
