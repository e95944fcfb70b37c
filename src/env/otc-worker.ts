// The OTC-GRPO state thread (started by otcStates.ts): holds every run's state in an OtcStore (bounded by runs, bytes
// and idleness) and does all the heavy work on it — parsing and validating a PUT body (1.2M questions: seconds of
// JSON and schema work), serialising a GET, sizing states. The server's event loop only passes bytes and small
// messages, so /v1/health stays prompt whatever states are being loaded.
import { parentPort, workerData } from 'node:worker_threads';
import { z } from 'zod';
import { OtcState, OtcStateJsonSchema } from '../core/rewards';
import { HttpError, parseJson } from './http';
import { describeIssues } from './protocol';
import { OtcStore, stateBytes, StateTooLarge, type OtcStoreOptions } from './otcStore';

export type OtcInit = Omit<OtcStoreOptions, 'now'>;

export type OtcRequest =
  | { op: 'subset'; run: string; questions: string[] }
  | { op: 'observe'; run: string; minima: Record<string, number> }
  | { op: 'get'; run: string }
  /** Parses and checks a state; it is kept aside until `commit` (or dropped by `discard`: the request timed out). */
  | { op: 'put'; run: string; body: Uint8Array }
  | { op: 'commit'; put: number }
  | { op: 'discard'; put: number }
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
const staged = new Map<number, { run: string; state: OtcState; bytes: number }>();
const stats = (): OtcStats => ({ runs: store.size, evictions: store.evictions, bytes: store.bytes });

/** A PUT body → the state it holds; every problem is the HTTP error the client gets (docs/env-server.md). */
function parseState(body: Uint8Array): { state: OtcState; bytes: number } {
  const value = parseJson(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new HttpError('invalid_request', 'body: expected an object {"version": 1, "min_tool_calls": {…}}');
  // Strict, as every request object of the server: a misspelt key is named, not silently dropped.
  const unknown = Object.keys(value).find((k) => !(k in OtcStateJsonSchema.shape));
  if (unknown !== undefined) throw new HttpError('invalid_request', `${unknown}: unknown key (expected version and min_tool_calls)`, unknown);
  let state: OtcState;
  try {
    state = OtcState.fromJSON(value);
  } catch (e) {
    if (!(e instanceof z.ZodError)) throw e;
    const { message, path } = describeIssues(e);
    throw new HttpError('invalid_request', message, path);
  }
  const bytes = stateBytes(Object.keys((value as { min_tool_calls: object }).min_tool_calls));
  if (bytes > store.maxBytes) throw new HttpError('state_too_large', new StateTooLarge(bytes, store.maxBytes).message);
  return { state, bytes };
}

function handle(id: number, req: OtcRequest): { value: unknown; transfer?: ArrayBuffer[] } {
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
    case 'put': {
      const { state, bytes } = parseState(req.body);
      staged.set(id, { run: req.run, state, bytes });
      return { value: { questions: state.size } };
    }
    case 'commit': {
      const s = staged.get(req.put);
      staged.delete(req.put);
      if (!s) throw new Error(`no staged state ${req.put}`);
      store.set(s.run, s.state, s.bytes);
      return { value: null };
    }
    case 'discard':
      staged.delete(req.put);
      return { value: null };
    case 'delete':
      return { value: store.delete(req.run) };
    case 'stats':
      return { value: null };
  }
}

port.on('message', ({ id, req }: { id: number; req: OtcRequest }) => {
  try {
    const { value, transfer } = handle(id, req);
    port.postMessage({ id, ok: true, value, stats: stats() } satisfies OtcReply, transfer ?? []);
  } catch (e) {
    const error = e instanceof HttpError ? { code: e.code, message: e.message, path: e.path } : { code: 'internal', message: `OTC state: ${(e as Error)?.message ?? String(e)}` };
    port.postMessage({ id, ok: false, error, stats: stats() } satisfies OtcReply);
  }
});

// Idle states go without being asked, so /v1/health's counts fall too (and their memory is freed).
setInterval(() => {
  const before = store.evictions;
  const s = stats();
  if (store.evictions !== before) port.postMessage({ id: 0, ok: true, value: null, stats: s } satisfies OtcReply);
}, Math.min(60_000, Math.max(1_000, (init.idleMs ?? 60_000) / 4))).unref();
