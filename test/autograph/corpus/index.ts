/** The whole AutoGraph conformance corpus, grouped by construct family. */
import type { CorpusProgram } from "./types.js";
import { conditionals } from "./conditionals.js";
import { loops, rangeLoops } from "./loops.js";
import { jumps } from "./jumps.js";
import { logical } from "./logical.js";
import { operators } from "./operators.js";
import { indexing } from "./indexing.js";
import { exceptions } from "./exceptions.js";
import { scoping } from "./scoping.js";
import { calls } from "./calls.js";
import { logging } from "./logging.js";
import { numeric } from "./numeric.js";
import { edgeSemantics } from "./edge-semantics.js";
import { seams } from "./seams.js";

export type { CorpusProgram, TensorModes } from "./types.js";

export const corpusGroups: Record<string, CorpusProgram[]> = {
  conditionals,
  loops,
  ranges: rangeLoops,
  jumps,
  logical,
  operators,
  indexing,
  exceptions,
  scoping,
  calls,
  logging,
  numeric,
  edge: edgeSemantics,
  seams,
};

export const corpus: { group: string; program: CorpusProgram }[] = Object.entries(corpusGroups).flatMap(([group, programs]) =>
  programs.map((program) => ({ group, program })),
);
