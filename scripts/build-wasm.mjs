// Builds wasm/build/kernels.wasm from the AssemblyScript sources in wasm/ (entry: wasm/kernels.ts).
// -O3, SIMD, threads (shared memory imported from env.memory, so JS and workers share it).
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import asc from "assemblyscript/asc";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outDir = path.join(root, "wasm", "build");
mkdirSync(outDir, { recursive: true });

const args = [
  path.join(root, "wasm", "kernels.ts"),
  "--outFile", path.join(outDir, "kernels.wasm"),
  "--textFile", path.join(outDir, "kernels.wat"),
  "-O3", "--noAssert",
  "--runtime", "stub",
  "--use", "abort=",
  "--enable", "simd,threads",
  "--importMemory", "--sharedMemory",
  "--initialMemory", "1", "--maximumMemory", "65536",
];
const { error, stderr } = await asc.main(args);
if (error) {
  console.error(stderr.toString());
  console.error("build-wasm: " + error.message);
  process.exit(1);
}
console.log("build-wasm: wrote " + path.relative(root, path.join(outDir, "kernels.wasm")));
