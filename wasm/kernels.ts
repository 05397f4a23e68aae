// Entry point of the Stagecraft CPU kernels module (built by scripts/build-wasm.mjs).
// Memory is imported and shared between the main thread and worker threads; the module
// allocates nothing itself: JS hands it byte addresses inside an arena it manages.
export { sgemm, wsBytes } from "./sgemm";
