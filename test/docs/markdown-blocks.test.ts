/** The docs examples' extraction and claims (markdown-blocks.ts, claims.ts), on small inputs. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { codeBlocks } from "./markdown-blocks.js";
import { checkClaims, claimsOf } from "./claims.js";

test("fenced blocks: kind by language, the opening fence's line, longer and tilde fences, annotations", () => {
  const md = [
    "# Title", //                                        1
    "```ts", //                                          2
    "const a = 1;",
    "```",
    "",
    "<!-- example: no-run (needs a GPU) -->", //          6
    "",
    "````js", //                                         8
    "```",
    "inside",
    "````",
    "~~~sh", //                                          12
    "npm test",
    "~~~",
    "```", //                                            15
    "src/  a layout",
    "```",
    "<!-- example: needs-webgpu -->",
    "```typescript", //                                  19
    "x;",
    "```",
  ].join("\n");
  const blocks = codeBlocks("doc.md", md);
  assert.deepEqual(
    blocks.map((b) => [b.line, b.lang, b.kind, b.mark]),
    [
      [2, "ts", "program", undefined],
      [8, "js", "program", { kind: "no-run", reason: "needs a GPU" }],
      [12, "sh", "commands", undefined],
      [15, "", "text", undefined],
      [19, "typescript", "program", { kind: "needs-webgpu" }],
    ],
  );
  assert.equal(blocks[1]!.code, "```\ninside\n");
});

test("an annotation that is unknown, not right before a block, on a text block or without a reason is an error", () => {
  assert.throws(() => codeBlocks("d.md", "<!-- example: skip -->\n```ts\nx\n```"), /d\.md:1: unknown example annotation "skip"/);
  assert.throws(() => codeBlocks("d.md", "<!-- example: no-run -->\n```ts\nx\n```"), /unknown example annotation "no-run"/);
  assert.throws(() => codeBlocks("d.md", "<!-- example: no-run (x) -->\nSome prose.\n```ts\nx\n```"), /d\.md:1: an example annotation must come right before a code block/);
  assert.throws(() => codeBlocks("d.md", "<!-- example: no-run (x) -->\n```\nlayout\n```"), /on a text block/);
  assert.throws(() => codeBlocks("d.md", "text\n<!-- example: needs-webgpu -->\n"), /d\.md:2: an example annotation with no code block after it/);
  assert.throws(() => codeBlocks("d.md", "```ts\nnever closed\n"), /d\.md:1: code block never closed/);
});

test("claims: the comment ending a console.log line; exact text, a named check, or an error", () => {
  const code = ['console.log([1, 2]); // -> [ 1, 2 ]', "const y = 2; // not a claim", 'console.log("x"); // no such check', "console.log(3); // -> 4"].join("\n");
  const claims = claimsOf(code);
  assert.deepEqual(claims.map((c) => c.line), [1, 3, 4]);
  const failures = checkClaims(claims, [
    { line: 1, text: "[ 1,\n  2 ]" },
    { line: 3, text: "x" },
    { line: 4, text: "3" },
  ]);
  assert.deepEqual(
    failures.map((f) => [f.claim.line, f.message.split(":")[0]]),
    [
      [3, "no check for this claim"],
      [4, 'printed "3", the doc says "4"'],
    ],
  );
  assert.match(checkClaims(claimsOf("console.log(1); // -> 1"), [])[0]!.message, /never printed/);
});
