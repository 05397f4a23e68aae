/**
 * Our own structural types for what the platform hands out from optional or dev-only packages,
 * so the emitted declarations need neither @webgpu/types nor @types/cli-progress: a strict
 * TypeScript consumer (no skipLibCheck) type-checks without them (test/api/consumer-types.test.ts).
 */

/** Dawn's Node binding (the `webgpu` package): `create` returns its GPU object (navigator.gpu's type; gpu-api.ts reads it as GPU). */
export interface DawnModule {
  create(flags: string[]): object;
  globals: object;
}

/** The part of a cli-progress bar the library uses. */
export interface CliProgressBar {
  start(total: number, startValue: number, payload?: object): void;
  update(current: number, payload?: object): void;
  stop(): void;
}

/** A cli-progress preset (the bar's characters). */
export interface CliProgressPreset {
  barCompleteChar: string;
  barIncompleteChar: string;
  format: string;
}

/** The part of cli-progress the library uses. */
export interface CliProgress {
  SingleBar: new (options: { format?: string; barsize?: number; hideCursor?: boolean; clearOnComplete?: boolean }, preset?: CliProgressPreset) => CliProgressBar;
  Presets: { shades_classic: CliProgressPreset };
}
