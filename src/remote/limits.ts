/**
 * What bounds a worker: message sizes, tensor sizes, a session's bytes, a session's idle time;
 * and the two security checks, loopback addresses and the token. Every limit is a positive
 * integer or Infinity (no limit); NaN, negatives and fractions are a ValueError naming the
 * option, never a limit silently switched off (core/options.ts checkLimit, as the ONNX importer's).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { ValueError } from "../core/errors.js";
import { checkLimit } from "../core/options.js";

import { DEFAULT_WORKER_LIMITS, type WorkerLimits } from "./default-limits.js";

export { DEFAULT_WORKER_LIMITS, type WorkerLimits };

/** The limits of `options` with the defaults; a ValueError naming the option for a bad value. */
export function workerLimits(options: Partial<Record<keyof WorkerLimits, unknown>>, api: string): WorkerLimits {
  const out = { ...DEFAULT_WORKER_LIMITS };
  for (const k of Object.keys(DEFAULT_WORKER_LIMITS) as (keyof WorkerLimits)[]) {
    const v = options[k];
    if (v === undefined) continue;
    out[k] = positiveLimit(v, k, api);
  }
  // (gRPC takes a 32-bit signed message length; a chunk needs room beside its header)
  if (out.maxMessageBytes !== Infinity && out.maxMessageBytes < 1024) throw new ValueError(`maxMessageBytes must be at least 1024, got ${out.maxMessageBytes}`, api);
  return out;
}

/** A positive integer or Infinity, else a ValueError naming `what` (core/options.ts checkLimit). */
export function positiveLimit(v: unknown, what: string, api: string): number {
  return checkLimit(api, what, v, 1);
}

/** gRPC's message length option for a limit (Infinity: its "unlimited", -1). */
export function grpcLength(limit: number): number {
  return limit === Infinity ? -1 : Math.min(limit, 2 ** 31 - 1);
}

/** host:port split (IPv6 hosts in brackets); a ValueError for anything else. */
export function splitAddress(address: string, api: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\[\]]+):(\d{1,5})$/.exec(address);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new ValueError(`expected an address host:port (IPv6 in brackets: [::1]:port), got ${JSON.stringify(address)}`, api);
  return { host: m[1]!, port };
}

/** Whether `host` names only this machine: 127.0.0.0/8, ::1, localhost. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  return h === "localhost" || h === "[::1]" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Compares a presented token with the expected one in constant time (both hashed first, so their lengths do not leak either). */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  const a = createHash("sha256").update(presented ?? "").digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b) && presented !== undefined;
}

/** The metadata key the token travels in. */
export const TOKEN_METADATA_KEY = "x-stagecraft-token";
