/**
 * How deep graph-function calls nest while a staged function runs (a recursive graph function
 * calling itself), counted by both executors. Past MAX_CALL_DEPTH nested calls the run stops
 * with a CallDepthExceeded, which the staged function's entry (staging/stage.ts) reports as a
 * RecursionDepthError naming itself. The limit is explicit so that the error is the same
 * whatever stack the caller had left: the JavaScript stack holds about 780 nested calls on the
 * interpreter and 1,170 on the compiled executor (Node's default stack, a small body), so a
 * recursion within the limit runs on either, and one past it fails the same way on both.
 */
import { CallDepthExceeded } from "../core/errors.js";

/** Nested graph-function calls a run may make (documented in README.md, "Staging"). */
export const MAX_CALL_DEPTH = 500;

let depth = 0;

/** Enters a call of graph function `callee` (then `exitCall()` in a finally); throws past the limit. */
export function enterCall(callee: string): void {
  if (depth >= MAX_CALL_DEPTH) throw new CallDepthExceeded(callee, MAX_CALL_DEPTH);
  depth++;
}

export function exitCall(): void {
  depth--;
}
