/**
 * External data: a tensor whose bytes live in another file (`location`, `offset`, `length`
 * entries of TensorProto.external_data), as PyTorch's dynamo exporter writes `model.onnx.data`
 * beside the model. Only files inside the model's own folder are read: an absolute location,
 * one that climbs out with `..`, or a symbolic link that leads out is refused. The requested
 * range must lie inside the file and have exactly the tensor's size; only that range is read.
 */
import { closeSync, fstatSync, lstatSync, openNonBlockingSync, path, readSync, realpathSync } from "../core/platform/node.js";
import { OnnxExternalDataError } from "./errors.js";
import type { TensorProto } from "./protobuf.js";

export class ExternalDataReader {
  private readonly files = new Map<string, { fd: number; size: number }>();
  private readonly root: string;

  /** `dir`: the folder of the model file; external files must be inside it. */
  constructor(dir: string) {
    try {
      this.root = realpathSync(dir);
    } catch (e) {
      throw new OnnxExternalDataError(`the model's folder ${dir} cannot be read: ${(e as Error).message}`, "onnx.load");
    }
  }

  /** The `expectedBytes` bytes of `p`'s external data. */
  read(p: TensorProto, name: string, expectedBytes: number): Uint8Array {
    const entries = new Map(p.external_data.map((e) => [e.key, e.value]));
    const location = entries.get("location");
    if (!location) throw new OnnxExternalDataError(`${name} is stored externally but names no location`, "onnx.load");
    const offset = entries.has("offset") ? parseInteger(entries.get("offset")!, name, "offset") : 0;
    const length = entries.has("length") ? parseInteger(entries.get("length")!, name, "length") : expectedBytes;
    if (length !== expectedBytes) {
      throw new OnnxExternalDataError(`${name}: external data length ${length} does not match the tensor's ${expectedBytes} bytes`, "onnx.load");
    }
    const file = this.open(location, name);
    if (offset + length > file.size) {
      throw new OnnxExternalDataError(`${name}: bytes ${offset}..${offset + length} of ${JSON.stringify(location)} are past its end (${file.size} bytes)`, "onnx.load");
    }
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const n = readSync(file.fd, out, done, length - done, offset + done);
      if (n <= 0) throw new OnnxExternalDataError(`${name}: ${JSON.stringify(location)} ended early`, "onnx.load");
      done += n;
    }
    return out;
  }

  private open(location: string, name: string): { fd: number; size: number } {
    const cached = this.files.get(location);
    if (cached) return cached;
    if (location.includes("\0")) {
      throw new OnnxExternalDataError(`${name}: external data location ${JSON.stringify(location)} contains a NUL character, which no file name holds`, "onnx.load");
    }
    if (path.isAbsolute(location) || /^[a-zA-Z]:/.test(location)) {
      throw new OnnxExternalDataError(`${name}: external data location ${JSON.stringify(location)} is absolute; only files beside the model are read`, "onnx.load");
    }
    const target = path.resolve(this.root, location);
    let real: string;
    try {
      real = realpathSync(target);
    } catch {
      throw new OnnxExternalDataError(`${name}: external data file ${JSON.stringify(location)} is not found beside the model (in ${this.root})`, "onnx.load");
    }
    if (!real.startsWith(this.root + path.sep)) {
      throw new OnnxExternalDataError(`${name}: external data location ${JSON.stringify(location)} points outside the model's folder ${this.root}; refused`, "onnx.load");
    }
    // A FIFO (or device) inside the folder would block a plain open until a writer comes: it is
    // refused before opening, and the open itself does not block (O_NONBLOCK), so one put in
    // place between the two checks is refused by the fstat after it.
    const notRegular = () => new OnnxExternalDataError(`${name}: external data location ${JSON.stringify(location)} is not a regular file`, "onnx.load");
    let fd: number;
    try {
      if (!lstatSync(real).isFile()) throw notRegular();
      fd = openNonBlockingSync(real);
    } catch (e) {
      if (e instanceof OnnxExternalDataError) throw e;
      throw new OnnxExternalDataError(`${name}: external data file ${JSON.stringify(location)} cannot be opened: ${(e as Error).message}`, "onnx.load");
    }
    const st = fstatSync(fd);
    if (!st.isFile()) {
      closeSync(fd);
      throw new OnnxExternalDataError(`${name}: external data location ${JSON.stringify(location)} is not a regular file`, "onnx.load");
    }
    const entry = { fd, size: st.size };
    this.files.set(location, entry);
    return entry;
  }

  /** Closes the files opened so far. */
  close(): void {
    for (const f of this.files.values()) closeSync(f.fd);
    this.files.clear();
  }
}

function parseInteger(s: string, name: string, key: string): number {
  if (!/^\d+$/.test(s)) throw new OnnxExternalDataError(`${name}: external data ${key} ${JSON.stringify(s)} is not a non-negative integer`, "onnx.load");
  const n = Number(s);
  if (!Number.isSafeInteger(n)) throw new OnnxExternalDataError(`${name}: external data ${key} ${s} is too large`, "onnx.load");
  return n;
}

