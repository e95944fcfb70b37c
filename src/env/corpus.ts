// The environment server's view of a corpus file: when its index must be rebuilt (a fingerprint of the file) and the
// error a corpus it cannot serve raises. The format itself (parsing, streaming) is the core's: src/core/corpus.ts.
import { openSync, readSync, closeSync, fstatSync } from 'node:fs';
import { createHash } from 'node:crypto';

/** A corpus the server cannot serve (no valid passage): a user error, reported in one line by the CLI. */
export class CorpusError extends Error {}

export interface CorpusFingerprint {
  size: number;
  mtimeMs: number;
  /** sha256 of the first and the last MiB (they overlap for small files). */
  head: string;
  tail: string;
}

const PROBE = 1 << 20;

/** Cheap identity of a corpus file: a changed size, mtime or first/last MiB forces an index rebuild. */
export function fingerprintCorpus(file: string): CorpusFingerprint {
  const fd = openSync(file, 'r');
  try {
    const st = fstatSync(fd);
    const hashRange = (start: number): string => {
      const len = Math.min(PROBE, st.size - start);
      const buf = Buffer.alloc(Math.max(0, len));
      if (len > 0) readSync(fd, buf, 0, len, start);
      return createHash('sha256').update(buf).digest('hex');
    };
    return { size: st.size, mtimeMs: st.mtimeMs, head: hashRange(0), tail: hashRange(Math.max(0, st.size - PROBE)) };
  } finally {
    closeSync(fd);
  }
}

export function sameFingerprint(a: CorpusFingerprint, b: CorpusFingerprint): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.head === b.head && a.tail === b.tail;
}
