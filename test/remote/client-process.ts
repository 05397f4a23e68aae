// A client process for test/remote/faults.test.ts: connects to the worker at argv[2], makes three
// remote tensors, prints "ready", and waits to be killed (it never closes its session).
import * as sc from "../../src/api/index.js";

await sc.remote.connect({ cluster: { worker: [process.argv[2]!] } });
const f = await sc.remote.device("/job:worker/task:0/device:cpu:0", sc.stage((x: sc.Tensor) => x.add(1)));
const kept = [await f(sc.tensor([1])), await f(sc.tensor([2])), await f(sc.tensor([3]))];
console.log(`ready ${kept.length}`);
setInterval(() => {}, 1000);
