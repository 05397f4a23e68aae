// Interleaved A/B of remote eager ops (src/remote/eager.ts): two checkouts' clients in one process, each with its own
// worker process run from that checkout's sources; per round, each side runs 200 tiny ops read back one by one, then a chain
// of 200 read once; medians over 9 rounds, and the median of the per-round ratios old/new.
//
//   nice -n 10 node --import tsx bench/remote-ab.ts OLD_CHECKOUT NEW_CHECKOUT
import { spawn } from "node:child_process";
const roots = process.argv.slice(2);
function worker(root: string): Promise<{ address: string; kill: () => void }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", `const cli = await import(${JSON.stringify(root + "/src/api/cli.ts")}); process.exitCode = await cli.main(["worker", "--listen", "127.0.0.1:0"]);`], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    p.stdout.on("data", (d) => { out += d; const m = /listening on (\S+)/.exec(out); if (m) resolve({ address: m[1]!, kill: () => p.kill("SIGTERM") }); });
    p.on("exit", (c) => reject(new Error(`worker exited ${c}`)));
  });
}
const DEVICE = "/job:worker/task:0/device:cpu:0";
const sides = [];
for (const root of roots) {
  const sc = await import(root + "/src/api/index.ts");
  const w = await worker(root);
  const cluster = await sc.remote.connect({ cluster: { worker: [w.address] } });
  const ex = sc.tensor([1, 2, 3, 4]);
  const h0 = sc.device(DEVICE, () => ex.add(0));
  await h0.data();
  sides.push({ root, sc, w, cluster, ex, h0, read: [] as number[], chain: [] as number[], local: [] as number[] });
}
const OPS = 200;
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]!; };
for (let round = 0; round < 9; round++) {
  for (const s of sides) {
    const { sc, ex } = s;
    let t = performance.now();
    for (let i = 0; i < OPS; i++) ex.add(1);
    s.local.push(((performance.now() - t) / OPS) * 1000);
    t = performance.now();
    for (let i = 0; i < OPS; i++) { const y = sc.device(DEVICE, () => ex.add(1)); await y.data(); y.dispose(); }
    await sc.remote.sync(DEVICE);
    s.read.push(((performance.now() - t) / OPS) * 1000);
    t = performance.now();
    let y = s.h0;
    for (let i = 0; i < OPS; i++) y = sc.device(DEVICE, () => y.add(1));
    await y.data();
    s.chain.push(((performance.now() - t) / OPS) * 1000);
  }
}
for (const s of sides) console.log(`${s.root}: local ${median(s.local).toFixed(2)} us; read each ${median(s.read).toFixed(1)} us/op (${(median(s.read) / median(s.local)).toFixed(0)}x); chained ${median(s.chain).toFixed(1)} us/op (${(median(s.chain) / median(s.local)).toFixed(0)}x)`);
const [a, b] = sides;
if (a && b) console.log(`ratio old/new, per round medians: read each ${(median(a.read.map((x, i) => x / b.read[i]!))).toFixed(2)}x, chained ${(median(a.chain.map((x, i) => x / b.chain[i]!))).toFixed(2)}x`);
for (const s of sides) { await s.cluster.close(); s.w.kill(); }
