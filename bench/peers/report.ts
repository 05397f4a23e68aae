/**
 * The peer tables (markdown, one per workload) and the chart (SVG rendered headless by
 * vega-lite + vega): every system's figure relative to the best peer of its workload.
 */
import { compile, type TopLevelSpec } from "vega-lite";
import { parse, View } from "vega";
import { fmtRatio, isOurs, type Figure, type WorkloadResult } from "./harness.js";

const fmt = (x: number): string => (x >= 1000 ? x.toFixed(0) : x >= 100 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toPrecision(3));

/** The best (lowest median ms) peer figure of a workload, if any peer ran. */
export function bestPeer(w: WorkloadResult): Figure | undefined {
  let best: Figure | undefined;
  for (const f of w.figures) if (!isOurs(f.system) && f.ms && (!best || f.ms.median < best.ms!.median)) best = f;
  return best;
}

/** How many times faster than the best peer (> 1: faster), from medians. */
export function ratioToBest(w: WorkloadResult, f: Figure): number | undefined {
  const b = bestPeer(w);
  return b && f.ms ? b.ms!.median / f.ms.median : undefined;
}

function value(w: WorkloadResult, ms: number): string {
  return w.throughput ? fmt((w.throughput.perCall / ms) * 1000) : fmt(ms);
}

/** One markdown table per workload. */
export function markdownTables(results: WorkloadResult[]): string {
  const out: string[] = [];
  for (const w of results) {
    const unit = w.throughput ? w.throughput.unit : "ms per call";
    const best = bestPeer(w);
    out.push(`### ${w.name}`, "", `One call: ${w.call}.${w.note ? " " + w.note : ""}`, "");
    const refHead = w.reference ? ` vs ${w.reference}, per round (range) |` : "";
    out.push(`| system | ${unit} (median) | range | vs best peer${best ? ` (${best.system})` : ""} |${refHead}`, `|---|---:|---:|---:|${w.reference ? "---:|" : ""}`);
    for (const f of w.figures) {
      if (!f.ms) {
        out.push(`| ${f.system} | – | – | ${f.skip ? `not run: ${f.skip}` : `failed: ${f.error}`} |${w.reference ? " – |" : ""}`);
        continue;
      }
      const r = ratioToBest(w, f);
      const range = w.throughput ? `${value(w, f.ms.hi)}–${value(w, f.ms.lo)}` : `${fmt(f.ms.lo)}–${fmt(f.ms.hi)}`;
      const refCell = w.reference ? ` ${fmtRatio(f.vsReference)} |` : "";
      out.push(`| ${f.system} | ${value(w, f.ms.median)} | ${range} | ${r === undefined ? "–" : r.toFixed(2) + "x"} |${refCell}`);
    }
    out.push("");
  }
  return out.join("\n");
}

/** The same tables as plain text for the console. */
export function consoleTables(results: WorkloadResult[]): string {
  return markdownTables(results)
    .split("\n")
    .filter((l) => !l.startsWith("|---"))
    .join("\n");
}

/** An SVG chart: per workload, every system's speed relative to the best peer (log scale), with its range. */
export async function chartSvg(results: WorkloadResult[], title: string): Promise<string> {
  const data: Record<string, unknown>[] = [];
  for (const w of results) {
    const b = bestPeer(w);
    if (!b) continue;
    for (const f of w.figures) {
      if (!f.ms) continue;
      data.push({ workload: w.name, system: f.system, ratio: b.ms!.median / f.ms.median, lo: b.ms!.median / f.ms.hi, hi: b.ms!.median / f.ms.lo });
    }
  }
  const spec: TopLevelSpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title,
    data: { values: data },
    width: 520,
    height: { step: 9 },
    encoding: {
      y: { field: "workload", type: "nominal", sort: null, title: null, axis: { labelLimit: 330 } },
      yOffset: { field: "system", type: "nominal" },
      color: { field: "system", type: "nominal", legend: { orient: "bottom", columns: 3 } },
    },
    layer: [
      {
        mark: { type: "bar" },
        encoding: {
          x: { field: "ratio", type: "quantitative", scale: { type: "log" }, title: "speed relative to the best peer (median; log scale; > 1 is faster)" },
          tooltip: [{ field: "system" }, { field: "ratio", format: ".2f" }],
        },
      },
      { mark: { type: "rule", color: "black" }, encoding: { x: { field: "lo", type: "quantitative" }, x2: { field: "hi" } } },
      { mark: { type: "rule", color: "gray", strokeDash: [4, 3] }, encoding: { x: { datum: 1 } } },
    ],
  };
  const view = new View(parse(compile(spec).spec), { renderer: "none" });
  return view.toSVG();
}
