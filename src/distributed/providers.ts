/**
 * The collective providers `sc.distributed.init({ provider })` can join a job with, by name: the
 * engine under the collective ops (src/ops/collective.ts's `CollectiveProvider`). Built in: "mpi"
 * (Open MPI through koffi) and "single" (a job of one process). A second engine (NCCL, Gloo, a
 * test double) is added with `registerProvider` without touching the ops or the optimizer; see
 * docs/distributed.md for NCCL's plan.
 */
import { ValueError } from "../core/errors.js";
import type { CollectiveProvider } from "../ops/collective.js";
import { mpiProvider } from "./mpi.js";
import { singleProcessProvider } from "./single.js";

/** What `init` passes a provider's factory (the options it was given). */
export interface ProviderOptions {
  /** Path of the library to load (MPI: libmpi). */
  libmpi?: string;
}

/** Joins the job (initializing the library once per process) and returns its provider. */
export type ProviderFactory = (options: ProviderOptions) => CollectiveProvider;

const factories = new Map<string, ProviderFactory>([
  ["mpi", (o) => mpiProvider({ libmpi: o.libmpi })],
  ["single", () => singleProcessProvider],
]);

/** Makes `name` a choice of `init({ provider: name })`. */
export function registerProvider(name: string, factory: ProviderFactory): void {
  if (typeof name !== "string" || name === "") throw new ValueError(`a provider needs a name, got ${JSON.stringify(name)}`, "distributed.registerProvider");
  if (typeof factory !== "function") throw new ValueError(`provider ${name}: the factory must be a function (options) => CollectiveProvider, got ${typeof factory}`, "distributed.registerProvider");
  if (factories.has(name)) throw new ValueError(`a provider named ${name} is already registered`, "distributed.registerProvider");
  factories.set(name, factory);
}

/** The registered names, for messages and option checks. */
export function providerNames(): string[] {
  return [...factories.keys()];
}

/** The factory of `name` (checked by the caller against providerNames). */
export function providerFactory(name: string): ProviderFactory {
  return factories.get(name)!;
}
