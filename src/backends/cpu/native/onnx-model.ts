/**
 * Just enough of the ONNX protobuf encoding to build small models in memory: the single-node
 * models the native kernels run (matmul, conv) and the reference models of the benchmarks.
 * Only encoding, only the fields used here (field numbers from onnx.proto, IR version 8).
 * Loading ONNX files is the ONNX layer's job (src/onnx), not this one's.
 */

/** ONNX TensorProto.DataType codes of the element types used here. */
export const OnnxType = { float32: 1, int32: 6, int64: 7, bool: 9, float64: 11 } as const;
export type OnnxElem = keyof typeof OnnxType;

export type OnnxAttr = number | number[] | string | { float: number } | { floats: number[] } | { tensor: OnnxTensor };

export interface OnnxNode {
  op: string;
  inputs: string[];
  outputs: string[];
  attrs?: Record<string, OnnxAttr>;
  domain?: string;
}

export interface OnnxValueInfo {
  name: string;
  type: OnnxElem;
  /** Dimensions; a string is a symbolic dimension (dim_param). */
  shape: (number | string)[];
}

export interface OnnxTensor {
  name?: string;
  type: OnnxElem;
  dims: number[];
  data: Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array;
}

export interface OnnxGraph {
  nodes: OnnxNode[];
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
  initializers?: (OnnxTensor & { name: string })[];
  /** Default opset 17. */
  opset?: number;
  name?: string;
}

/** Protobuf wire-format writer (varints and length-delimited fields). */
class Writer {
  private buf = new Uint8Array(64);
  private n = 0;

  private ensure(k: number): void {
    if (this.n + k <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.n + k));
    next.set(this.buf.subarray(0, this.n));
    this.buf = next;
  }
  varint(v: number | bigint): void {
    let x = BigInt.asUintN(64, BigInt(v));
    this.ensure(10);
    while (x >= 0x80n) {
      this.buf[this.n++] = Number(x & 0x7fn) | 0x80;
      x >>= 7n;
    }
    this.buf[this.n++] = Number(x);
  }
  tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }
  bytes(field: number, b: Uint8Array): void {
    this.tag(field, 2);
    this.varint(b.length);
    this.ensure(b.length);
    this.buf.set(b, this.n);
    this.n += b.length;
  }
  string(field: number, s: string): void {
    this.bytes(field, new TextEncoder().encode(s));
  }
  int(field: number, v: number | bigint): void {
    this.tag(field, 0);
    this.varint(v);
  }
  float(field: number, v: number): void {
    this.tag(field, 5);
    this.ensure(4);
    new DataView(this.buf.buffer, this.buf.byteOffset).setFloat32(this.n, v, true);
    this.n += 4;
  }
  message(field: number, fill: (w: Writer) => void): void {
    const w = new Writer();
    fill(w);
    this.bytes(field, w.finish());
  }
  finish(): Uint8Array {
    return this.buf.slice(0, this.n);
  }
}

function writeTensor(w: Writer, t: OnnxTensor): void {
  for (const d of t.dims) w.int(1, d);
  w.int(2, OnnxType[t.type]);
  if (t.name !== undefined) w.string(8, t.name);
  w.bytes(9, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
}

function writeAttr(w: Writer, name: string, a: OnnxAttr): void {
  w.string(1, name);
  if (typeof a === "number") {
    if (!Number.isInteger(a)) throw new Error(`onnx-model: attribute ${name}: ${a} is not an integer (use { float })`);
    w.int(3, a);
    w.int(20, 2);
  } else if (typeof a === "string") {
    w.string(4, a);
    w.int(20, 3);
  } else if (Array.isArray(a)) {
    for (const v of a) w.int(8, v);
    w.int(20, 7);
  } else if ("float" in a) {
    w.float(2, a.float);
    w.int(20, 1);
  } else if ("floats" in a) {
    for (const v of a.floats) w.float(7, v);
    w.int(20, 6);
  } else {
    w.message(5, (t) => writeTensor(t, a.tensor));
    w.int(20, 4);
  }
}

function writeValueInfo(w: Writer, v: OnnxValueInfo): void {
  w.string(1, v.name);
  w.message(2, (type) =>
    type.message(1, (tt) => {
      tt.int(1, OnnxType[v.type]);
      tt.message(2, (shape) => {
        for (const d of v.shape) shape.message(1, (dim) => (typeof d === "number" ? dim.int(1, d) : dim.string(2, d)));
      });
    }),
  );
}

/** The bytes of a ModelProto holding `g`. */
export function encodeModel(g: OnnxGraph): Uint8Array {
  const w = new Writer();
  w.int(1, 8); // ir_version
  w.string(2, "stagecraft");
  w.message(7, (graph) => {
    g.nodes.forEach((n, i) =>
      graph.message(1, (node) => {
        for (const x of n.inputs) node.string(1, x);
        for (const y of n.outputs) node.string(2, y);
        node.string(3, `${n.op}_${i}`);
        node.string(4, n.op);
        if (n.domain !== undefined) node.string(7, n.domain);
        for (const [k, a] of Object.entries(n.attrs ?? {})) node.message(5, (attr) => writeAttr(attr, k, a));
      }),
    );
    graph.string(2, g.name ?? "graph");
    for (const t of g.initializers ?? []) graph.message(5, (tw) => writeTensor(tw, t));
    for (const v of g.inputs) graph.message(11, (vw) => writeValueInfo(vw, v));
    for (const v of g.outputs) graph.message(12, (vw) => writeValueInfo(vw, v));
  });
  w.message(8, (op) => op.int(2, g.opset ?? 17));
  return w.finish();
}
