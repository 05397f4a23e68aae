/** Installs op functions as Tensor methods: `x.add(y)` is `add(x, y)`. */
import { Tensor } from "../core/tensor.js";

export function installMethods(fns: Record<string, (x: any, ...rest: any[]) => unknown>): void {
  const proto = Tensor.prototype as unknown as Record<string, unknown>;
  for (const [name, fn] of Object.entries(fns)) {
    if (name in proto) throw new Error(`Tensor method ${name} is installed twice`);
    Object.defineProperty(proto, name, {
      value: function (this: Tensor, ...rest: unknown[]) {
        return fn(this, ...rest);
      },
      writable: true,
      configurable: true,
    });
  }
}
