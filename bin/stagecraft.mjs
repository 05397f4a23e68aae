#!/usr/bin/env node
// The stagecraft command (see src/api/cli.ts). Runs the built package (dist/); in a checkout
// without a build it runs the TypeScript sources through tsx.
import { existsSync } from "node:fs";

const dist = new URL("../dist/api/cli.js", import.meta.url);
let cli;
if (existsSync(dist)) cli = await import(dist.href);
else {
  const { register } = await import("tsx/esm/api");
  register();
  cli = await import(new URL("../src/api/cli.ts", import.meta.url).href);
}
process.exitCode = await cli.main(process.argv.slice(2));
