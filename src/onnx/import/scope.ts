/**
 * Values of an ONNX graph while it is interpreted inside a trace. A slot holds a tensor (and,
 * where it is known at trace time, its concrete value: constants, shapes of known tensors,
 * and what the importer folded from them), a sequence of slots (ONNX sequences have a length
 * known at trace time here), or an empty optional. Scopes nest: a subgraph sees the names of
 * the graphs around it.
 */
import type { Tensor } from "../../core/tensor.js";
import { currentHandler, type OpHandler } from "../../core/context.js";
import type { DType } from "../../core/dtype.js";
import { OnnxModelError, OnnxUnsupportedError } from "../errors.js";

export class Slot {
  /** The handler (trace context) the cached read belongs to: a read inside a branch stays there. */
  private cachedIn: OpHandler | null = null;
  private constructor(
    private readonly read: (() => Tensor) | null,
    private readonly value: Tensor | null,
    private cached: Tensor | null,
    /** Sequence elements, when the slot is a sequence. */
    readonly items: Slot[] | null,
    /** True for an optional without a value. */
    readonly isNone: boolean,
    /** Element dtype of an (empty) sequence or optional, when declared. */
    readonly elemDtype: DType | null,
    /** Whether ops on this value may be folded at trace time (false for trainable weights). */
    readonly foldable: boolean = true,
  ) {}

  /** A tensor; `known` is its concrete value when it is known at trace time. */
  static of(t: Tensor, known: Tensor | null = null): Slot {
    return new Slot(null, known, t, null, false, null);
  }
  /**
   * A tensor read where it is used (a Variable read inside the trace, once per trace context),
   * with the value it has now: `foldable` says whether ops on it may be computed at trace time
   * (not for trainable weights, whose value changes between calls).
   */
  static lazy(read: () => Tensor, known: Tensor | null, foldable: boolean): Slot {
    return new Slot(read, known, null, null, false, null, foldable);
  }
  static sequence(items: Slot[], elemDtype: DType | null = null): Slot {
    return new Slot(null, null, null, items, false, elemDtype ?? (items[0]?.isTensor ? items[0].tensor().dtype : null));
  }
  static none(elemDtype: DType | null = null): Slot {
    return new Slot(null, null, null, null, true, elemDtype);
  }

  get isTensor(): boolean {
    return this.items === null && !this.isNone;
  }
  get isSequence(): boolean {
    return this.items !== null;
  }

  tensor(): Tensor {
    if (this.items !== null) throw new OnnxUnsupportedError("a sequence was given where a tensor is expected", "onnx.load");
    if (this.isNone) throw new OnnxModelError("an empty optional was given where a tensor is expected", "onnx.load");
    if (this.read !== null) {
      const h = currentHandler();
      if (this.cached === null || this.cachedIn !== h) {
        this.cached = this.read();
        this.cachedIn = h;
      }
    }
    return this.cached!;
  }
  /** The concrete value known at trace time, or null. */
  known(): Tensor | null {
    if (this.value !== null) return this.value;
    const c = this.read === null ? this.cached : null;
    return c !== null && !c.isSymbolic ? c : null;
  }
  /** Whether an op on this value can be computed at trace time. */
  get canFold(): boolean {
    if (this.items !== null) return this.items.every((s) => s.canFold);
    if (this.isNone) return true;
    return this.foldable && this.known() !== null;
  }
}

export class Scope {
  private readonly values = new Map<string, Slot>();
  constructor(readonly parent: Scope | null) {}

  get(name: string): Slot | undefined {
    let s: Scope | null = this;
    while (s !== null) {
      const v = s.values.get(name);
      if (v !== undefined) return v;
      s = s.parent;
    }
    return undefined;
  }
  set(name: string, slot: Slot): void {
    this.values.set(name, slot);
  }
  hasOwn(name: string): boolean {
    return this.values.has(name);
  }
}
