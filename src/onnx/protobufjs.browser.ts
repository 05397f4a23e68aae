/**
 * protobufjs.ts for browsers (package.json's "browser" field puts this file in its place): a
 * bundle must carry protobufjs and has no `require`, so it is imported statically.
 */
import protobuf from "protobufjs/light.js";
import type { Protobuf } from "./protobufjs.js";

export type { Protobuf } from "./protobufjs.js";

export function loadProtobuf(): Protobuf {
  return protobuf;
}
