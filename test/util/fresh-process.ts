/** Runs programs in fresh processes for tests, and collects what they print. */
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export interface Collected {
  /** The program's exit code, null when a signal ended it. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Whether timeoutMs ran out (the program and everything it started were then killed). */
  timedOut: boolean;
}

export interface SpawnOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** After this long the program's whole process group is killed (SIGKILL). None: no limit. */
  timeoutMs?: number;
}

/**
 * Runs `cmd args` and resolves when it has ended and its output is closed; rejects only when it
 * cannot be started.
 *
 * The program runs in a process group of its own (detached), so what it starts (a shell's
 * commands, a background job) can be ended with it: on timeout the whole group is killed, and when
 * the program exits, what it left running in its group is killed too. Killing only the program
 * would leave its children holding the output pipes open (so no "close", no result) and running in
 * a folder the caller is about to delete.
 */
export function spawnCollect(cmd: string, args: string[], options: SpawnOptions = {}): Promise<Collected> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout.on("data", (d: Buffer) => (stdout += d));
    child.stderr.on("data", (d: Buffer) => (stderr += d));
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // (ESRCH: the group has ended already)
      }
    };
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            killGroup();
          }, options.timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("exit", killGroup);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

/** Runs a test script in a fresh Node process (TypeScript through tsx); resolves with the JSON it prints. */
export async function freshProcessJson<T>(script: URL, args: string[] = []): Promise<T> {
  const { code, stdout, stderr } = await spawnCollect(process.execPath, ["--import", "tsx", fileURLToPath(script), ...args]);
  if (code !== 0) throw new Error(`the fresh process exited with ${code}: ${stderr.slice(-2000)}`);
  try {
    return JSON.parse(stdout) as T;
  } catch (e) {
    throw new Error(`the fresh process printed no JSON (${(e as Error).message}): ${stderr.slice(-2000)}`);
  }
}

/** Whether process `pid` is running: it exists and has not ended (a zombie, ended but not yet reaped, is not running). */
export function processRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // Linux: the state is the field after the parenthesised command name ("Z": zombie, "X": dead).
    const state = /\)\s+(\S)/.exec(readFileSync(`/proc/${pid}/stat`, "utf8"))?.[1];
    return state !== "Z" && state !== "X";
  } catch {
    return process.platform !== "linux";
  }
}

/**
 * Whether process `pid` has ended within `ms` milliseconds (polled every 10 ms). A SIGKILL is
 * delivered asynchronously: the killed process closes its files (so a pipe it held reports
 * "close") a moment before the kernel marks it ended, so a check right after "close" can still
 * see it running.
 */
export async function processEndsWithin(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (processRunning(pid)) {
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

/**
 * Runs module code `script` (TypeScript through tsx) in a fresh Node process, with the engine
 * settings a test of engines must choose itself (STAGECRAFT_ENGINE, STAGECRAFT_AUTO and the
 * determinism switch the suite's runner sets) cleared, then `env` applied; returns the JSON object
 * its last line of output prints. Throws with its stderr when it fails.
 */
export function engineChildReport(script: string, env: Record<string, string>, cwd: string): Record<string, unknown> {
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd,
    env: { ...process.env, STAGECRAFT_ENGINE: "", STAGECRAFT_AUTO: "", STAGECRAFT_DETERMINISTIC: "", ...env },
    encoding: "utf8",
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`the child process failed (status ${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as Record<string, unknown>;
}
