// Growable typed arrays for index building: amortised O(1) push without boxing millions of numbers.

type TypedArrayCtor<T> = { new (length: number): T };

export class Grow<T extends Uint32Array | Uint16Array | Float64Array> {
  array: T;
  length = 0;
  constructor(
    private readonly ctor: TypedArrayCtor<T>,
    initial = 1024,
  ) {
    this.array = new ctor(initial);
  }

  push(value: number): void {
    if (this.length === this.array.length) this.reserve(this.length + 1);
    this.array[this.length++] = value;
  }

  /** Make room for at least `n` entries in total. */
  reserve(n: number): void {
    if (n <= this.array.length) return;
    let cap = this.array.length * 2;
    while (cap < n) cap *= 2;
    const next = new this.ctor(cap);
    next.set(this.array.subarray(0, this.length) as never);
    this.array = next;
  }

  /** The filled part, copied into an exactly-sized array (so the spare capacity can be collected). */
  trimmed(): T {
    const out = new this.ctor(this.length);
    out.set(this.array.subarray(0, this.length) as never);
    return out;
  }
}
