/** Runs a test script in a fresh Node process (TypeScript through tsx); resolves with the JSON it prints. */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

export function freshProcessJson<T>(script: URL, args: string[] = []): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(script), ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d));
    child.stderr.on("data", (d: Buffer) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`the fresh process exited with ${code}: ${err.slice(-2000)}`));
      try {
        resolve(JSON.parse(out) as T);
      } catch (e) {
        reject(new Error(`the fresh process printed no JSON (${(e as Error).message}): ${err.slice(-2000)}`));
      }
    });
  });
}
