/**
 * Shared by the AutoGraph differential tests (corpus and fuzzing): running a function with its
 * console output captured, describing what it did, and a watchdog that kills a run making no
 * progress (an endless loop in converted code) instead of letting it hang.
 */
import { format, inspect } from "node:util";
import { Worker } from "node:worker_threads";

/** What running a function did: its value or exception, and what it logged. */
export interface Outcome {
  threw: boolean;
  value?: unknown;
  /** Exception constructor name (or `typeof` for thrown non-objects) and message. */
  errorType?: string;
  errorMessage?: string;
  logs: string[];
}

export function describeError(e: unknown): { errorType: string; errorMessage: string } {
  if (e instanceof Error) return { errorType: e.constructor.name, errorMessage: e.message };
  if (e !== null && typeof e === "object") return { errorType: `object ${e.constructor?.name ?? "null-proto"}`, errorMessage: inspect(e) };
  return { errorType: typeof e, errorMessage: String(e) };
}

/** Runs fn() with console.log captured (formatted as console.log formats it). */
export function runCaptured(fn: () => unknown): Outcome {
  const logs: string[] = [];
  const original = console.log;
  console.log = (...a: unknown[]) => {
    logs.push(format(...a));
  };
  try {
    return { threw: false, value: fn(), logs };
  } catch (e) {
    return { threw: true, ...describeError(e), logs };
  } finally {
    console.log = original;
  }
}

/**
 * Starts a watchdog thread: if `heartbeat` is not called for `seconds`, it prints what ran
 * last (the label of the last heartbeat, prefixed by `name`) and kills the process.
 */
export function startWatchdog(name: string, seconds = 30): (label: string) => void {
  const watchdog = new Worker(
    `const { parentPort } = require("node:worker_threads");
     const { writeSync } = require("node:fs");
     let label = "startup", since = Date.now();
     parentPort.on("message", (m) => { label = m; since = Date.now(); });
     setInterval(() => {
       if (Date.now() - since > ${seconds * 1000}) {
         writeSync(2, "\\n${name}: no progress for ${seconds} s while running " + label + " (an endless loop in converted code?)\\n");
         process.kill(process.pid, "SIGKILL");
       }
     }, 1000);`,
    { eval: true },
  );
  watchdog.unref();
  return (label) => watchdog.postMessage(label);
}
