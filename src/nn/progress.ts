/**
 * Training progress: a cli-progress bar in a terminal, plain lines otherwise (a log file, CI).
 * Shows the step, the values given (loss, accuracy, ...) and steps per second.
 */
import { loadCliProgress, stdoutIsTTY, type CliProgressBar } from "../core/platform/node.js";
import { ValueError } from "../core/errors.js";
import { checkChoice, checkOptions, optionKeys } from "../core/options.js";


export interface ProgressOptions {
  /** Label before the bar or at the start of each line ("epoch 1/3", "eager"). */
  label?: string;
  /** Total steps (the bar's length; lines show "step i/total"). */
  total: number;
  /** "auto" (default): a bar when stdout is a TTY, lines otherwise. */
  mode?: "auto" | "bar" | "lines" | "off";
  /** Lines mode: print every `every` steps (and the last). Default: about 10 lines. */
  every?: number;
  /** Where lines go (default console.log). */
  write?: (line: string) => void;
}

/** The values of `mode` (and of fit's `progress`). */
export const PROGRESS_MODES: readonly NonNullable<ProgressOptions["mode"]>[] = ["auto", "bar", "lines", "off"];

const PROGRESS_KEYS = optionKeys<ProgressOptions>()("label", "total", "mode", "every", "write");

function fmt(v: number): string {
  return Math.abs(v) >= 100 ? v.toFixed(1) : v.toFixed(4);
}

export class Progress {
  private readonly bar: CliProgressBar | null = null;
  private readonly start = performance.now();
  private readonly every: number;
  private readonly write: (line: string) => void;
  private readonly mode: "bar" | "lines" | "off";
  private last = 0;

  constructor(private readonly options: ProgressOptions) {
    checkOptions("Progress", options, PROGRESS_KEYS);
    if (options === undefined) throw new ValueError(`takes an options object with the total steps ({ total })`, "Progress");
    if (!(typeof options.total === "number" && options.total >= 0)) throw new ValueError(`total must be a number >= 0, got ${String(options.total)}`, "Progress");
    if (options.every !== undefined && !(Number.isInteger(options.every) && options.every >= 1)) throw new ValueError(`every must be an integer >= 1, got ${String(options.every)}`, "Progress");
    const mode = checkChoice("Progress", "mode", options.mode, PROGRESS_MODES) ?? "auto";
    const wanted = mode === "auto" ? (stdoutIsTTY() ? "bar" : "lines") : mode;
    // (no bars where there is no terminal: the browser)
    const cliProgress = wanted === "bar" ? loadCliProgress() : null;
    this.mode = wanted === "bar" && !cliProgress ? "lines" : wanted;
    this.every = options.every ?? (options.total > 0 ? Math.max(1, Math.round(options.total / 10)) : 50);
    this.write = options.write ?? ((l) => console.log(l));
    if (this.mode === "bar" && cliProgress) {
      this.bar = new cliProgress.SingleBar(
        {
          format: `${options.label ? `${options.label} ` : ""}|{bar}| {value}/{total} {values} {rate} steps/s`,
          barsize: 24,
          hideCursor: true,
          clearOnComplete: false,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(options.total, 0, { values: "", rate: "-" });
    }
  }

  /** Steps per second since the start. */
  rate(step: number): number {
    return step / ((performance.now() - this.start) / 1000);
  }

  /** Reports that `step` steps are done, with the current values. */
  update(step: number, values: Record<string, number>): void {
    const shown = Object.entries(values).map(([k, v]) => `${k} ${fmt(v)}`).join("  ");
    const rate = this.rate(step).toFixed(1);
    if (this.bar) this.bar.update(step, { values: shown, rate });
    else if (this.mode === "lines" && (step - this.last >= this.every || step === this.options.total)) {
      this.last = step;
      const total = this.options.total;
      const at = total > 0 ? `${String(step).padStart(String(total).length)}/${total}` : String(step);
      this.write(`${this.options.label ? `${this.options.label}  ` : ""}step ${at}  ${shown}  ${rate} steps/s`);
    }
  }

  /** Ends the bar (lines mode: nothing to do). */
  stop(): void {
    this.bar?.stop();
  }
}
