/** `sc.data`: input pipelines (Dataset) and the MNIST digits. */
export { Dataset, type Element } from "./dataset.js";
export { mnist, type MnistOptions, type MnistSplit } from "./mnist.js";
