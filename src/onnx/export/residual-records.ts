/**
 * Residual records in an exported model. The gradient of a staged call splits the callee into a
 * forward, which packs the values its backward keeps into one record (ops/residuals.ts: a handle,
 * a JavaScript object at run time), and a backward, which unpacks them. Export inlines calls, so
 * when a record is made and unpacked in one model the packed values' ONNX names are all the
 * backward needs: a record exports as nothing but that list of names. A record that would be an
 * ONNX value (a model output, an If branch's or a Loop body's result, a Loop-carried value) has
 * no ONNX form, and neither has an unpacked value that is no record made in the model (a zero
 * cotangent of a record, in a higher-order gradient): both are refused, saying why.
 */
import type { SourceLocation } from "../../core/errors.js";
import { OnnxUnsupportedError } from "../errors.js";

interface Record_ {
  names: string[];
  loc: SourceLocation | null;
}

export class ResidualRecords {
  private readonly byName = new Map<string, Record_>();

  /** A name standing for a record of `values` (no ONNX value holds it). */
  pack(name: string, values: string[], loc: SourceLocation | null): string {
    this.byName.set(name, { names: values, loc });
    return name;
  }

  /** The names of the values record `name` holds, `count` of them; null where `name` is no record made in the model. */
  unpack(name: string, count: number): string[] | null {
    const r = this.byName.get(name);
    if (r === undefined) return null;
    if (r.names.length !== count) throw new Error(`internal: the record ${name} holds ${r.names.length} values, ${count} were unpacked`);
    return r.names;
  }

  /** Refuses `inputs` of an ONNX node (`opType`) where one is a record. */
  checkInputs(opType: string, inputs: readonly string[]): void {
    for (const i of inputs) {
      const r = this.byName.get(i);
      if (r === undefined) continue;
      throw new OnnxUnsupportedError(
        `cannot export op packResiduals: the residual record of a staged call's gradient (the values its backward keeps) would be an input of an ONNX ${opType} ` +
          `(a model output, a branch's or a loop body's result, or a loop-carried value), and no ONNX value can hold it; ` +
          `call a plain (unstaged) function there instead of a staged one: its ops are differentiated in place`,
        "onnx.export",
        r.loc,
      );
    }
  }
}
