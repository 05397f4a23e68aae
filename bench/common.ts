/** What every benchmark suite shares: its result rows, seeded data, and how it runs standalone. */

/**
 * One measured comparison (ratio > 1: Stagecraft is better); `spread`, where a suite measures
 * it, is the relative MAD-based spread of the per-round ratios (bench/baseline.ts's relativeSpread).
 */
export type Row = { name: string; peer: string; ours: number; theirs: number; unit: string; ratio: number; spread?: number };

/** Seeded float32 values in [-scale, scale) (a linear congruential generator). */
export function randomValues(n: number, seed: number, scale = 1): Float32Array {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = (s / 4294967296 - 0.5) * 2 * scale;
  }
  return a;
}

export const median = (x: number[]): number => x.slice().sort((p, q) => p - q)[x.length >> 1]!;

/** Whether the module at `url` is the script node was started with (a suite run standalone). */
export function isMainModule(url: string): boolean {
  return process.argv[1] !== undefined && url.endsWith(process.argv[1].replace(/\\/g, "/").split("/").pop() ?? "");
}
