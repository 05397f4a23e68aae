/**
 * The public configuration API (sc.config): the determinism switch. On, staged functions never
 * choose how they run by timing ("auto", the default engine, keeps every graph on our executor),
 * so float32 results are bit-identical to eager code and from run to run; the environment
 * variable STAGECRAFT_DETERMINISTIC=1 turns it on for a whole process.
 */
export { setDeterministic, isDeterministic } from "../core/determinism.js";
