// The OTC-GRPO state thread (started by otcStates.ts): holds every run's state in an OtcStore (bounded by runs, bytes
// and idleness) and does the work on it — unpacking a PUT's checked state, serialising a GET, sizing states. A PUT's
// body is parsed and checked in a search worker that is then replaced (otcBody.ts), never here: this heap lives as
// long as the server and keeps what it grew to. The server's event loop only passes bytes and small messages, so
// /v1/health stays prompt whatever states are being loaded.
import { parentPort, workerData } from 'node:worker_threads';
import { HttpError } from './http';
import { OtcStore, type OtcStoreOptions } from './otcStore';
import { unpack, type PackedState } from './otcBody';

export type OtcInit = Omit<OtcStoreOptions, 'now'>;

export type OtcRequest =
  | { op: 'subset'; run: string; questions: string[] }
  | { op: 'observe'; run: string; minima: Record<string, number> }
  | { op: 'get'; run: string }
  /** Replaces the run's state with a PUT's, checked and packed by otcBody.ts (the server decided to commit it). */
  | { op: 'set'; run: string; packed: PackedState; bytes: number }
  | { op: 'delete'; run: string }
  | { op: 'stats' };

export interface OtcStats {
  runs: number;
  evictions: number;
  bytes: number;
}

export type OtcReply =
  | { id: number; ok: true; value: unknown; stats: OtcStats }
  | { id: number; ok: false; error: { code: string; message: string; path?: string }; stats: OtcStats }
  /** Unasked: idle states expired. */
  | { id: 0; ok: true; value: null; stats: OtcStats };

const port = parentPort;
if (!port) throw new Error('otc-worker.ts must run in a worker thread');
const init = workerData as OtcInit;
const store = new OtcStore(init);
const stats = (): OtcStats => ({ runs: store.size, evictions: store.evictions, bytes: store.bytes });

function handle(req: OtcRequest): { value: unknown; transfer?: ArrayBuffer[] } {
  switch (req.op) {
    case 'subset': {
      const state = store.get(req.run);
      const out: Record<string, number> = {};
      for (const q of req.questions) {
        const n = state?.get(q);
        if (n !== undefined) out[q] = n;
      }
      return { value: out };
    }
    case 'observe':
      store.observe(req.run, req.minima);
      return { value: null };
    case 'get': {
      const state = store.get(req.run);
      if (!state) return { value: null };
      const bytes = Buffer.from(JSON.stringify(state.toJSON()), 'utf8');
      return { value: bytes, transfer: [bytes.buffer as ArrayBuffer] };
    }
    case 'set':
      store.set(req.run, unpack(req.packed), req.bytes);
      return { value: null };
    case 'delete':
      return { value: store.delete(req.run) };
    case 'stats':
      return { value: null };
  }
}

port.on('message', ({ id, req }: { id: number; req: OtcRequest }) => {
  try {
    const { value, transfer } = handle(req);
    port.postMessage({ id, ok: true, value, stats: stats() } satisfies OtcReply, transfer ?? []);
  } catch (e) {
    const error =
      e instanceof HttpError
        ? { code: e.code, message: e.message, path: e.path }
        : { code: 'internal', message: `OTC state: ${(e as Error)?.message ?? String(e)}` };
    port.postMessage({ id, ok: false, error, stats: stats() } satisfies OtcReply);
  }
});

// Idle states go without being asked, so /v1/health's counts fall too (and their memory is freed).
setInterval(
  () => {
    const before = store.evictions;
    const s = stats();
    if (store.evictions !== before) port.postMessage({ id: 0, ok: true, value: null, stats: s } satisfies OtcReply);
  },
  Math.min(60_000, Math.max(1_000, (init.idleMs ?? 60_000) / 4)),
).unref();
