// Preloaded (node --require) by tests of a machine without onnxruntime-node: every resolution of
// it, or of a file inside it, fails as it does where the package is not installed.
const Module = require("node:module");
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === "onnxruntime-node" || request.startsWith("onnxruntime-node/")) {
    const e = new Error(`Cannot find module '${request}'`);
    e.code = "MODULE_NOT_FOUND";
    throw e;
  }
  return resolve.call(this, request, ...rest);
};
