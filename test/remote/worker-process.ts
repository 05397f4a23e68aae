/**
 * Real worker processes for the remote tests: `node bin/stagecraft.mjs worker --listen
 * 127.0.0.1:0 ...` (the command users run; in a checkout without dist/ it runs the sources
 * through tsx), with the port read from the line it prints on stdout.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const BIN = fileURLToPath(new URL("../../bin/stagecraft.mjs", import.meta.url));

export interface WorkerProcess {
  address: string;
  process: ChildProcess;
  /** Ends it (SIGKILL unless another signal is given) and waits for its exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** The exit code and output of `stagecraft worker ARGS` run to its end (for arguments it refuses). */
export function runWorkerCommand(args: string[], timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [BIN, "worker", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      p.kill("SIGKILL");
      reject(new Error(`stagecraft worker ${args.join(" ")} did not exit in ${timeoutMs} ms; stdout: ${stdout}`));
    }, timeoutMs);
    p.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export function spawnWorker(args: string[] = [], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<WorkerProcess> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [BIN, "worker", "--listen", "127.0.0.1:0", ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    const exited = new Promise<void>((r) => p.once("exit", () => r()));
    const timer = setTimeout(() => {
      p.kill("SIGKILL");
      reject(new Error(`the worker printed no address in ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    p.stderr.on("data", (d) => (stderr += d));
    p.stdout.on("data", (d) => {
      stdout += d;
      const m = /listening on (\S+)/.exec(stdout);
      if (!m) return;
      clearTimeout(timer);
      resolve({
        address: m[1]!,
        process: p,
        kill: async (signal = "SIGKILL") => {
          if (p.exitCode === null && p.signalCode === null) p.kill(signal);
          await exited;
        },
      });
    });
    p.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the worker exited (${code}) before listening; stderr: ${stderr}`));
    });
  });
}
