/**
 * The provider of a job of one process: every collective is a copy (a sum, mean or max over one
 * rank is the rank's own value). For programs written for N ranks run alone, and for tests of
 * the collective ops without a launcher.
 */
import type { CollectiveCallCounts, CollectiveProvider } from "../ops/collective.js";

const calls: CollectiveCallCounts = { allReduce: 0, broadcast: 0, allGather: 0, elements: 0 };

export const singleProcessProvider: CollectiveProvider = {
  name: "single",
  rank: 0,
  size: 1,
  allReduce(send, recv) {
    calls.allReduce++;
    calls.elements += send.length;
    recv.set(send);
  },
  allReduceInPlace(data) {
    calls.allReduce++;
    calls.elements += data.length;
  },
  broadcast(data) {
    calls.broadcast++;
    calls.elements += data.length;
  },
  allGather(send, recv) {
    calls.allGather++;
    calls.elements += send.length;
    recv.set(send);
  },
  callCounts: () => calls,
};
