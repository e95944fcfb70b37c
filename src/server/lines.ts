// A document as an array of lines, edited in place by LSP incremental changes, with one cached analysis per
// line. Editing a line drops only that line's analysis; lines an edit removes and re-inserts unchanged (a
// reload from disk while a trainer appends, a moved block) get their analysis back by text.

export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}
export interface ContentChange {
  range?: Range;
  text: string;
}

/** Spread arguments overflow the stack past ~100k; concat does not. */
function replace<T>(arr: T[], start: number, deleteCount: number, items: T[]): T[] {
  if (items.length < 20_000) {
    arr.splice(start, deleteCount, ...items);
    return arr;
  }
  return arr.slice(0, start).concat(items, arr.slice(start + deleteCount));
}

/** Told about every result an edit takes out of the model and every one it puts back (a moved line's). */
export interface ResultListener<R> {
  removed(r: R): void;
  added(r: R): void;
}

export class LineModel<R> {
  lines: string[];
  /** results[i] belongs to lines[i] while it is defined. */
  results: (R | undefined)[];
  version: number;
  listener?: ResultListener<R>;

  constructor(text: string, version = 0) {
    this.lines = text.split('\n');
    this.results = new Array(this.lines.length);
    this.version = version;
  }

  get lineCount(): number {
    return this.lines.length;
  }

  text(): string {
    return this.lines.join('\n');
  }

  apply(changes: readonly ContentChange[], version: number): void {
    for (const c of changes) this.applyOne(c);
    this.version = version;
  }

  private applyOne(c: ContentChange): void {
    if (!c.range) {
      this.replaceLines(0, this.lines.length - 1, '', '', c.text);
      return;
    }
    const last = this.lines.length - 1;
    const sL = clamp(c.range.start.line, 0, last);
    const eL = clamp(c.range.end.line, sL, last);
    // A position past the end of the document means its end.
    const sC =
      c.range.start.line > last ? this.lines[sL].length : clamp(c.range.start.character, 0, this.lines[sL].length);
    const eC = c.range.end.line > last ? this.lines[eL].length : clamp(c.range.end.character, 0, this.lines[eL].length);
    const head = this.lines[sL].slice(0, sC);
    const tail = this.lines[eL].slice(sL === eL ? Math.max(sC, eC) : eC);
    this.replaceLines(sL, eL, head, tail, c.text);
  }

  private replaceLines(sL: number, eL: number, head: string, tail: string, text: string): void {
    const fresh = (head + text + tail).split('\n');
    const removed = eL - sL + 1;
    // Reuse analyses of removed lines that come back unchanged (keyed by line text).
    const reuse = new Map<string, R>();
    for (let i = sL; i <= eL; i++) {
      const r = this.results[i];
      if (r !== undefined) reuse.set(this.lines[i], r);
    }
    const freshResults = fresh.map((l) => reuse.get(l));
    if (this.listener) {
      for (let i = sL; i <= eL; i++) if (this.results[i] !== undefined) this.listener.removed(this.results[i]!);
      for (const r of freshResults) if (r !== undefined) this.listener.added(r);
    }
    this.lines = replace(this.lines, sL, removed, fresh);
    this.results = replace(this.results, sL, removed, freshResults);
  }
}

function clamp(x: number, lo: number, hi: number): number {
  return x < lo ? lo : x > hi ? hi : x;
}
