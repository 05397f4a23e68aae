/**
 * The provider of a job of one process: every collective is a copy (a sum, mean or max over one
 * rank is the rank's own value). For programs written for N ranks run alone, and for tests of
 * the collective ops without a launcher.
 */
import type { CollectiveProvider } from "../ops/collective.js";

export const singleProcessProvider: CollectiveProvider = {
  name: "single",
  rank: 0,
  size: 1,
  allReduce(send, recv) {
    recv.set(send);
  },
  broadcast() {},
  allGather(send, recv) {
    recv.set(send);
  },
};
