// A PUT otc-state body, parsed and checked where it cannot hurt: in a search worker thread that is replaced once the
// task is done (search-pool.ts), so the hundreds of MB a 1M-question body costs to parse go back to the system with
// the thread, whether the PUT is then kept, refused or timed out. (Parsed in the OTC state thread, whose heap is never
// returned, eight timed-out PUTs of 22.5 MB left the server at 0.4–1.4 GB with no state kept.) What comes back is the
// state packed in three flat values — the keys in one string, their lengths, their minima — which the state thread
// unpacks into its map only when the server commits the PUT.
import { z } from 'zod';
import { OtcState, OtcStateJsonSchema } from '../core/rewards';
import { HttpError, parseJson } from './http';
import { describeIssues } from './protocol';
import { stateBytes, StateTooLarge } from './otcStore';

export interface PackedState {
  /** Every key, one after the other. */
  keys: string;
  /** Each key's length in `keys` (UTF-16 units). */
  lengths: Uint32Array;
  minima: Float64Array;
}

export interface CheckedState {
  questions: number;
  /** Estimated memory once unpacked (otcStore.stateBytes). */
  bytes: number;
  packed: PackedState;
}

/** A PUT body → its state, packed; every problem is the HTTP error the client gets (docs/env-server.md). */
export function checkStateBody(body: Uint8Array, maxBytes: number): CheckedState {
  const value = parseJson(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new HttpError('invalid_request', 'body: expected an object {"version": 1, "min_tool_calls": {…}}');
  // Strict, as every request object of the server: a misspelt key is named, not silently dropped.
  const unknown = Object.keys(value).find((k) => !(k in OtcStateJsonSchema.shape));
  if (unknown !== undefined)
    throw new HttpError('invalid_request', `${unknown}: unknown key (expected version and min_tool_calls)`, unknown);
  let state: OtcState;
  try {
    state = OtcState.fromJSON(value);
  } catch (e) {
    if (!(e instanceof z.ZodError)) throw e;
    const { message, path } = describeIssues(e);
    throw new HttpError('invalid_request', message, path);
  }
  const bytes = stateBytes(Object.keys((value as { min_tool_calls: object }).min_tool_calls));
  if (bytes > maxBytes) throw new HttpError('state_too_large', new StateTooLarge(bytes, maxBytes).message);
  return { questions: state.size, bytes, packed: pack(state) };
}

function pack(state: OtcState): PackedState {
  const keys: string[] = [];
  const lengths = new Uint32Array(state.size);
  const minima = new Float64Array(state.size);
  let i = 0;
  for (const [k, v] of state.entries()) {
    keys.push(k);
    lengths[i] = k.length;
    minima[i++] = v;
  }
  return { keys: keys.join(''), lengths, minima };
}

export function unpack(p: PackedState): OtcState {
  function* entries(): Generator<[string, number]> {
    let at = 0;
    for (let i = 0; i < p.lengths.length; i++) {
      const end = at + p.lengths[i];
      yield [p.keys.slice(at, end), p.minima[i]];
      at = end;
    }
  }
  return OtcState.fromEntries(entries());
}

/** What a packed state's arrays are moved (not copied) to another thread with. */
export function packedTransfer(p: PackedState): ArrayBuffer[] {
  return [p.lengths.buffer as ArrayBuffer, p.minima.buffer as ArrayBuffer];
}
