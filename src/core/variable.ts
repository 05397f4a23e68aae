/**
 * Variables: mutable state with a stable identity. Reading a variable yields its current
 * value tensor (the same handle until the next assignment, so tapes can watch it);
 * assignment replaces the value, never mutates storage a tape may have saved.
 */
import { Tensor, makeTensor, type TensorLike } from "./tensor.js";
import { DtypeError, ShapeError } from "./errors.js";
import { fmtShape, shapesEqual } from "./shape.js";
import type { DType } from "./dtype.js";
import { currentHandler } from "./context.js";
import { checkOptions, optionKeys } from "./options.js";

export interface VariableReadObserver {
  onVariableRead(v: Variable, value: Tensor): void;
}

/** Observers notified on every read (gradient tapes watch variables automatically). */
export const variableReadObservers: VariableReadObserver[] = [];

let nextVariableId = 1;

export class Variable extends Tensor {
  readonly variableId = nextVariableId++;
  readonly name: string;
  readonly trainable: boolean;
  private current: Tensor;

  constructor(initial: Tensor, options: { name?: string; trainable?: boolean } = {}) {
    checkOptions("Variable", options, ["name", "trainable"]);
    super(initial._data, initial.shape, initial.dtype, initial.device, null);
    this._buffer = initial._buffer;
    this.current = initial;
    this.name = options.name ?? `variable_${this.variableId}`;
    this.trainable = options.trainable ?? true;
  }

  /** @internal The stored value, ignoring any staging context (executors use this). */
  get storedValue(): Tensor {
    return this.current;
  }

  /** @internal Replaces the stored value directly (executors running assign nodes). */
  setStoredValue(value: Tensor): void {
    this.current = value;
    this._data = value._data;
    this._buffer = value._buffer;
  }

  /** The current value; tapes that are recording watch it. */
  read(): Tensor {
    const h = currentHandler();
    const v = h.readVariable ? h.readVariable(this) : this.current;
    for (let i = 0; i < variableReadObservers.length; i++) variableReadObservers[i]!.onVariableRead(this, v);
    return v;
  }

  /** The current value without notifying tapes (for optimizers and checkpoints). */
  peek(): Tensor {
    const h = currentHandler();
    return h.readVariable ? h.readVariable(this) : this.current;
  }

  /** @internal Replaces the value; shape and dtype must stay the same. */
  setValue(value: Tensor, op = "assign"): this {
    if (value.dtype !== this.dtype) {
      throw new DtypeError(`variable ${this.name} has dtype ${this.dtype}, cannot assign a ${value.dtype} value`, op);
    }
    if (!shapesEqual(value.shape, this.shape)) {
      throw new ShapeError(`variable ${this.name} has shape ${fmtShape(this.shape)}, cannot assign a value of shape ${fmtShape(value.shape)}`, op);
    }
    const h = currentHandler();
    if (h.assignVariable) {
      h.assignVariable(this, value);
      return this;
    }
    this.current = value;
    this._data = value._data;
    this._buffer = value._buffer;
    return this;
  }

  override toString(): string {
    return `Variable(${this.name}, ${this.current.toString()})`;
  }
}

export interface VariableOptions {
  name?: string;
  trainable?: boolean;
  dtype?: DType;
}
const VARIABLE_OPTIONS = optionKeys<VariableOptions>()("name", "trainable", "dtype");

export function variable(init: TensorLike, options: VariableOptions = {}): Variable {
  checkOptions("variable", options, VARIABLE_OPTIONS);
  currentHandler().createVariable?.(options.name ?? "variable");
  const t = init instanceof Tensor ? (init instanceof Variable ? init.peek() : init) : makeTensor("variable", init, undefined, options.dtype);
  if (t.isSymbolic) {
    throw new ShapeError("a variable's initial value must be concrete; create variables eagerly (sc.initScope in staged code)", "variable");
  }
  return new Variable(t, options);
}
