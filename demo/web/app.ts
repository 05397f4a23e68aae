/**
 * The demo page: loads the digits, trains step by step while the page stays responsive, plots
 * the loss and the test accuracy (uPlot), shows steps/s for the mode and device in use, and
 * classifies what is drawn on the pad. `window.demo` exposes the state for the browser test.
 */
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import "./style.css";
import * as sc from "stagecraft";
import { DrawingPad } from "./pad.js";
import { parseDigits, Trainer, type Mode, type StepResult } from "./train.js";
import { TrainingLoop } from "./training-loop.js";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const trainButton = $<HTMLButtonElement>("train");
const resetButton = $<HTMLButtonElement>("reset");
const deviceSelect = $<HTMLSelectElement>("device");
const status = $("status");

/** Test digits evaluated for the accuracy curve, and how often. */
const EVAL_COUNT = 500;
const EVAL_EVERY = 25;
/** Steps averaged for steps/s (the first step after a switch, which may trace, is left out). */
const RATE_WINDOW = 20;

const state = {
  running: false,
  steps: 0,
  losses: [] as number[],
  accuracies: [] as { step: number; accuracy: number }[],
  rates: {} as Record<string, number>,
  prediction: null as null | { digit: number; probability: number },
  error: null as string | null,
};
(window as unknown as { demo: unknown }).demo = { state: () => JSON.parse(JSON.stringify(state)) };

let digits: ReturnType<typeof parseDigits> | null = null;
let recent: number[] = [];
let lastKey = "";
/** Set when the mode or device changes: that step may trace, so steps/s leaves it out. */
let skipNext = true;

function mode(): Mode {
  return (document.querySelector('input[name="mode"]:checked') as HTMLInputElement).value as Mode;
}

// ---- the chart ---------------------------------------------------------------------------

const chartData: [number[], (number | null)[], (number | null)[]] = [[], [], []];
const chart = new uPlot(
  {
    width: Math.max(320, $("chart").clientWidth - 2),
    height: 300,
    scales: { x: { time: false }, accuracy: { range: [0, 1] } },
    axes: [{ label: "step" }, { label: "loss", scale: "y" }, { label: "test accuracy", scale: "accuracy", side: 1, grid: { show: false } }],
    series: [
      { label: "step" },
      { label: "loss", stroke: "#1565c0", width: 1.5, scale: "y", spanGaps: true },
      { label: "test accuracy", stroke: "#2e7d32", width: 2, scale: "accuracy", spanGaps: true, points: { show: true } },
    ],
  },
  chartData as uPlot.AlignedData,
  $("chart"),
);
let chartDirty = false;
function redraw(): void {
  if (!chartDirty) return;
  chartDirty = false;
  chart.setData(chartData as uPlot.AlignedData);
}

// ---- training ----------------------------------------------------------------------------

function showStats(loss: number | null): void {
  $("step").textContent = String(state.steps);
  if (loss !== null) $("loss").textContent = loss.toFixed(3);
  const last = state.accuracies[state.accuracies.length - 1];
  if (last) $("accuracy").textContent = `${(last.accuracy * 100).toFixed(1)}%`;
  const rate = state.rates[lastKey];
  $("rate").textContent = rate ? `${rate.toFixed(1)} (${lastKey})` : "–";
}

async function evaluate(t: Trainer): Promise<void> {
  const accuracy = await t.testAccuracy(EVAL_COUNT, deviceSelect.value);
  if (t !== loop?.trainer) return; // (Reset while it ran)
  state.accuracies.push({ step: state.steps, accuracy });
  chartData[2][chartData[2].length - 1] = accuracy;
  chartDirty = true;
}

let frame = 0;

/** Records one step's result (only steps of the current trainer get here: training-loop.ts). */
async function recordStep(r: StepResult, t: Trainer, key: string): Promise<void> {
  state.steps++;
  state.losses.push(r.loss);
  chartData[0].push(state.steps);
  chartData[1].push(r.loss);
  chartData[2].push(null);
  chartDirty = true;
  if (skipNext) skipNext = false;
  else {
    recent.push(r.ms);
    if (recent.length > RATE_WINDOW) recent.shift();
    state.rates[key] = 1000 / (recent.reduce((a, b) => a + b, 0) / recent.length);
  }
  if (state.steps % EVAL_EVERY === 0) await evaluate(t);
  // (the page paints and handles input between chunks of ~50 ms)
  if (performance.now() - frame > 50) {
    showStats(r.loss);
    redraw();
    await new Promise((resolve) => setTimeout(resolve, 0));
    frame = performance.now();
  }
}

/** The loop over the current trainer: made once the digits are loaded, its trainer replaced by Reset. */
let loop: TrainingLoop<Trainer, { result: StepResult; key: string }> | null = null;

function makeLoop(t: Trainer): TrainingLoop<Trainer, { result: StepResult; key: string }> {
  return new TrainingLoop(t, {
    step: async (trainer) => {
      const key = `${mode()} on ${deviceSelect.value}`;
      if (key !== lastKey) {
        lastKey = key;
        recent = [];
        skipNext = true;
      }
      return { result: await trainer.step(mode(), deviceSelect.value), key };
    },
    onStep: ({ result, key }, trainer) => recordStep(result, trainer, key),
    onError: (e) => {
      state.error = String((e as Error).stack ?? e);
      status.textContent = `Training stopped: ${(e as Error).message}`;
      showButton();
    },
    onStop: () => {
      state.running = false;
      redraw();
      showStats(state.losses[state.losses.length - 1] ?? null);
    },
  });
}

function showButton(): void {
  const run = loop?.started ?? false;
  trainButton.textContent = run ? "Pause" : state.steps > 0 ? "Resume training" : "Train";
  trainButton.setAttribute("aria-pressed", String(run));
}

/**
 * Train / Pause. `state.running` is true from Train until the loop has stopped: a pause takes
 * effect after the step in flight, so the browser test's wait for `!running` means no step is.
 */
function setRunning(run: boolean): void {
  if (!loop) return;
  if (run) {
    frame = performance.now();
    state.running = true;
    loop.start();
  } else loop.pause();
  showButton();
}

trainButton.addEventListener("click", () => setRunning(!loop?.started));
resetButton.addEventListener("click", () => {
  if (!digits || !loop) return;
  // (a step of the old trainer still in flight is dropped when it returns: training-loop.ts)
  loop.replace(new Trainer(digits));
  Object.assign(state, { steps: 0, losses: [], accuracies: [], rates: {} });
  chartData.forEach((a) => (a.length = 0));
  chartDirty = true;
  redraw();
  lastKey = "";
  showButton();
  showStats(null);
  $("loss").textContent = $("accuracy").textContent = "–";
});

// ---- devices -----------------------------------------------------------------------------

/**
 * Opens the WebGPU device where this build of Stagecraft has a WebGPU backend (sc.initWebGPU) and
 * the browser has navigator.gpu, then lists every device. Returns what to say about WebGPU.
 */
async function listDevices(): Promise<string> {
  let note = "";
  const init = (sc as unknown as { initWebGPU?: () => Promise<unknown> }).initWebGPU;
  if (typeof init !== "function") note = "This build of Stagecraft has no WebGPU backend: CPU only.";
  else if (!(navigator as { gpu?: unknown }).gpu) note = "This browser has no WebGPU (navigator.gpu): CPU only.";
  else {
    try {
      if ((await init()) === null) note = "WebGPU found no adapter: CPU only.";
    } catch (e) {
      note = `WebGPU did not start (${(e as Error).message}): CPU only.`;
    }
  }
  deviceSelect.replaceChildren(...sc.listDevices().map((d) => new Option(`${d.name}: ${d.description}`, d.name)));
  deviceSelect.title = note;
  return note;
}

// ---- the drawing pad ---------------------------------------------------------------------

const pad = new DrawingPad($<HTMLCanvasElement>("pad"));
const probabilities = $("probabilities");

async function classify(): Promise<void> {
  const pixels = pad.toDigit();
  if (!pixels) {
    $("prediction").textContent = "The pad is empty: draw a digit first.";
    return;
  }
  const trainer = loop?.trainer;
  if (!trainer) return;
  const p = await trainer.classify(pixels, deviceSelect.value);
  const digit = p.indexOf(Math.max(...p));
  state.prediction = { digit, probability: p[digit]! };
  $("prediction").textContent = `It looks like a ${digit} (${(p[digit]! * 100).toFixed(0)}%${trainer.steps < 50 ? "; train the network a little first" : ""}).`;
  probabilities.replaceChildren(
    ...p.map((v, i) => {
      const li = document.createElement("li");
      if (i === digit) li.className = "best";
      li.innerHTML = `<span>${i}</span><span class="bar" style="width:${(v * 100).toFixed(1)}%"></span><span>${(v * 100).toFixed(1)}%</span>`;
      return li;
    }),
  );
}

$("classify").addEventListener("click", () => void classify());
$("clear").addEventListener("click", () => {
  pad.clear();
  probabilities.replaceChildren();
  $("prediction").textContent = "Draw a digit, then press Classify.";
});
$("sample").addEventListener("click", () => {
  if (!digits) return;
  const i = Math.floor(Math.random() * digits.test.labels.shape[0]!);
  const all = digits.test.images.dataSync() as Float32Array;
  pad.show(all.slice(i * 784, (i + 1) * 784));
  void classify();
});
pad.onStroke = () => {
  if (loop && loop.trainer.steps > 0) void classify();
};

// ---- start -------------------------------------------------------------------------------

async function start(): Promise<void> {
  status.textContent = "Loading the digits…";
  const response = await fetch("mnist.bin");
  if (!response.ok) throw new Error(`mnist.bin: ${response.status} ${response.statusText}`);
  digits = parseDigits(await response.arrayBuffer());
  const gpuNote = await listDevices();
  loop = makeLoop(new Trainer(digits));
  trainButton.disabled = false;
  trainButton.textContent = "Train";
  const isolated = (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated;
  status.textContent =
    `${digits.train.labels.shape[0]} training and ${digits.test.labels.shape[0]} test digits loaded. ` +
    (isolated ? "CPU kernels: WebAssembly (the page is cross-origin isolated). " : "CPU kernels: TypeScript (the page is not cross-origin isolated, so no WebAssembly shared memory). ") +
    gpuNote;
}

start().catch((e: unknown) => {
  state.error = String(e);
  status.textContent = `Could not start: ${(e as Error).message}`;
});
