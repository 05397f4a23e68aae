/**
 * protobufjs (light build), loaded at its first use: the ONNX layer comes with the package entry,
 * and loading protobufjs is start-up that a program which never reads or writes ONNX should not
 * pay. Node's `require` loads it synchronously (decode and encode stay synchronous). Browsers use
 * protobufjs.browser.ts instead (package.json's "browser" field), which imports it statically.
 */
import type protobufModule from "protobufjs/light.js";
import { createRequire } from "../core/platform/node.js";

export type Protobuf = typeof protobufModule;

let protobuf: Protobuf | undefined;

export function loadProtobuf(): Protobuf {
  return (protobuf ??= createRequire(import.meta.url)("protobufjs/light.js") as Protobuf);
}
