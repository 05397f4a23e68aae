/**
 * Fresh names for generated variables. Generated names start with `$` (the operators fill
 * "no value yet" for them instead of raising the undefined-variable error a user variable
 * gets) and never clash with a name used in the function.
 */
export class NameGen {
  private readonly used: Set<string>;
  constructor(used: Iterable<string>) {
    this.used = new Set(used);
  }
  /** `base`, or `base2`, `base3`, ... when taken. */
  fresh(base: string): string {
    if (!this.used.has(base)) {
      this.used.add(base);
      return base;
    }
    for (let i = 2; ; i++) {
      const n = `${base}${i}`;
      if (!this.used.has(n)) {
        this.used.add(n);
        return n;
      }
    }
  }
  has(name: string): boolean {
    return this.used.has(name);
  }
  reserve(name: string): void {
    this.used.add(name);
  }
  /** The names taken so far (to undo a tentative pass with restore()). */
  snapshot(): Set<string> {
    return new Set(this.used);
  }
  restore(s: Set<string>): void {
    this.used.clear();
    for (const n of s) this.used.add(n);
  }
}
