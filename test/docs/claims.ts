/**
 * What the docs' examples say they print, checked against what they printed.
 *
 * A claim is the comment that ends a line calling `console.log` (the recorder gives each print
 * the line it came from). Two forms:
 *
 * - `console.log(x); // -> TEXT`: the printed text is TEXT (whitespace runs compared as one space).
 *   For deterministic output.
 * - any other comment (`// close to [[2], [-1], [0.5]] and 0.3`, `// about 0.95`): a check named by
 *   that exact comment text in CHECKS below, which reads the printed text and says how it is
 *   compared. A claim without a check, or a check no document uses any more, fails the test, so a
 *   comment that promises a result is never left unchecked.
 */
import type { Print } from "./sandbox.js";

export interface Claim {
  /** 1-based line within the block. */
  line: number;
  comment: string;
}

export function claimsOf(code: string): Claim[] {
  const claims: Claim[] = [];
  code.split("\n").forEach((text, i) => {
    const m = /\bconsole\.log\(.*\)[;,]?\s*\/\/\s?(.*)$/.exec(text);
    if (m) claims.push({ line: i + 1, comment: m[1]!.trim() });
  });
  return claims;
}

/** The numbers in a text, in order (for checks that parse printed tensors). */
function numbers(text: string): number[] {
  return [...text.matchAll(/-?\d+(?:\.\d*)?(?:e[+-]?\d+)?/gi)].map((m) => Number(m[0]));
}

/** The values of each `Tensor(...)` a text shows (a Variable prints its tensor). */
function tensorValues(text: string): number[][] {
  return [...text.matchAll(/Tensor\(([\s\S]*?), shape=/g)].map((m) => numbers(m[1]!));
}

function near(actual: number, expected: number, tolerance: number, what: string): void {
  if (!(Math.abs(actual - expected) <= tolerance)) {
    throw new Error(`${what}: ${actual} is not within ${tolerance} of ${expected}`);
  }
}

/** Checks for the claims that are not exact text, by the claim's comment. */
export const CHECKS: Record<string, (printed: string) => void> = {
  // README, Example: Adam fits y = x·[2, -1, 0.5] + 0.3 exactly (no noise) in 200 steps.
  "close to [[2], [-1], [0.5]] and 0.3": (printed) => {
    const [w, b] = tensorValues(printed);
    if (!w || !b) throw new Error(`expected two tensors, printed ${printed}`);
    [2, -1, 0.5].forEach((v, i) => near(w[i]!, v, 1e-2, `w[${i}]`));
    near(b[0]!, 0.3, 1e-2, "b");
  },
  // README, Example: d³/dt³ (t sin t) = -3 sin t - t cos t, at t = 1, in float64.
  "-3 sin(1) - cos(1) = -3.0647...": (printed) => near(Number(printed), -3 * Math.sin(1) - Math.cos(1), 1e-12, "d3(1)"),
  // README, Models: test accuracy after two epochs of the seeded convnet.
  "about 0.95": (printed) => near(Number(printed), 0.95, 0.02, "test accuracy"),
  // README, Models: the summary of Conv2d(8, 5), ReLU, MaxPool2d(2), Flatten, Linear(10) on [1, 1, 28, 28].
  "layers, output shapes, parameter counts": (printed) => {
    const conv = 8 * 1 * 5 * 5 + 8;
    const linear = 10 * 8 * 12 * 12 + 10;
    for (const row of [/Conv2d\)\s+\[1, 8, 24, 24\]\s+208\b/, /MaxPool2d\)\s+\[1, 8, 12, 12\]/, /Linear\)\s+\[1, 10\]\s+11,530\b/]) {
      if (!row.test(printed)) throw new Error(`no row matching ${row} in\n${printed}`);
    }
    if (!printed.includes(`Total params: ${(conv + linear).toLocaleString("en-US")}`)) throw new Error(`total is not ${conv + linear}:\n${printed}`);
  },
  // README, WebGPU: the loss read back asynchronously and synchronously is the same.
  "both read back; dataSync blocks (Node)": (printed) => {
    const [a, b] = printed.split(/(?=Float32Array)/).map((s) => numbers(s.replace(/^Float32Array\(\d+\)/, "")));
    if (!a || !b || a.length === 0 || a.join() !== b.join()) throw new Error(`the two read-backs differ: ${printed}`);
  },
};

export interface ClaimFailure {
  claim: Claim;
  message: string;
}

/** Compares each claim of a block with what its line printed. */
export function checkClaims(claims: Claim[], prints: Print[]): ClaimFailure[] {
  const failures: ClaimFailure[] = [];
  const squash = (s: string) => s.replace(/\s+/g, " ").trim();
  for (const claim of claims) {
    const printed = prints.filter((p) => p.line === claim.line).map((p) => p.text);
    if (printed.length === 0) {
      failures.push({ claim, message: "the line never printed" });
      continue;
    }
    for (const text of printed) {
      try {
        if (claim.comment.startsWith("->")) {
          const expected = claim.comment.slice(2);
          if (squash(text) !== squash(expected)) throw new Error(`printed ${JSON.stringify(text.length > 600 ? `${text.slice(0, 600)}...` : text)}, the doc says ${JSON.stringify(squash(expected))}`);
        } else {
          const check = CHECKS[claim.comment];
          if (!check) throw new Error(`no check for this claim: add "-> exact output" to the doc, or a check to test/docs/claims.ts's CHECKS`);
          check(text);
        }
      } catch (e) {
        failures.push({ claim, message: (e as Error).message });
      }
    }
  }
  return failures;
}
