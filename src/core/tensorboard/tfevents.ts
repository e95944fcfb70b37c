// TensorBoard event files (`events.out.tfevents.*`), read without TensorFlow: TFRecord framing (a little-endian
// uint64 length, the masked CRC-32C of those 8 bytes, the payload, the masked CRC-32C of the payload) around
// `tensorflow.Event` protobufs, of which only the scalar summaries are decoded. Formats, as the writers users run
// write them: tensorflow/core/lib/io/record_writer.cc (framing), tensorflow/core/util/event.proto and
// tensorflow/core/framework/summary.proto, tensor.proto, tensor_shape.proto (fields). Scalars come in two shapes:
// `simple_value` (torch.utils.tensorboard, tensorboardX, verl's tensorboard logger) and a rank-0 `tensor` with
// metadata plugin "scalars" (TensorFlow 2, tensorboard.summary.Writer — our trainer). No dependency: no maintained
// npm reader exists; the tests read files written by the real writers. No vscode import.

/** One scalar point. */
export interface ScalarPoint {
  tag: string;
  step: number;
  wallTime: number;
  value: number;
}

export interface RecordsRead {
  /** Complete records' payloads, in order. */
  payloads: Uint8Array[];
  /** Bytes consumed: the start of the first incomplete record (a file still being written ends mid-record). */
  consumed: number;
  /** A record whose checksum failed or whose length is absurd: reading stops there (what follows cannot be framed). */
  corrupt?: { offset: number; message: string };
}

// ------------------------------------------------------------------ CRC-32C (Castagnoli), as TFRecord masks it

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let c = 0xffffffff;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export function maskedCrc(bytes: Uint8Array, start = 0, end = bytes.length): number {
  const c = crc32c(bytes, start, end);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** A record larger than this is taken as corruption (TensorBoard's own summaries are far smaller). */
const MAX_RECORD = 256 * 1024 * 1024;

/** Split `buf` into TFRecords, checking both checksums; an incomplete last record is left for the next read. */
export function readRecords(buf: Uint8Array): RecordsRead {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const payloads: Uint8Array[] = [];
  let pos = 0;
  while (pos + 12 <= buf.length) {
    const lengthBig = view.getBigUint64(pos, true);
    if (view.getUint32(pos + 8, true) !== maskedCrc(buf, pos, pos + 8))
      return { payloads, consumed: pos, corrupt: { offset: pos, message: 'record length checksum mismatch' } };
    if (lengthBig > BigInt(MAX_RECORD))
      return { payloads, consumed: pos, corrupt: { offset: pos, message: `record of ${lengthBig} bytes` } };
    const length = Number(lengthBig);
    if (pos + 12 + length + 4 > buf.length) break;
    const data = buf.subarray(pos + 12, pos + 12 + length);
    if (view.getUint32(pos + 12 + length, true) !== maskedCrc(data))
      return { payloads, consumed: pos, corrupt: { offset: pos, message: 'record data checksum mismatch' } };
    payloads.push(data);
    pos += 12 + length + 4;
  }
  return { payloads, consumed: pos };
}

// ------------------------------------------------------------------ protobuf wire format (what these messages use)

interface Field {
  no: number;
  wire: number;
  /** varint (as a number; int64 steps fit a double exactly up to 2^53) */
  int?: number;
  /** fixed64 / fixed32 field's bytes offset into the message */
  at?: number;
  bytes?: Uint8Array;
}

class WireError extends Error {}

function* fields(msg: Uint8Array): Generator<Field> {
  let pos = 0;
  const varint = (): number => {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (pos >= msg.length) throw new WireError('truncated varint');
      const b = msg[pos++];
      result += (b & 0x7f) * mul;
      if (!(b & 0x80)) return result;
      mul *= 128;
    }
    throw new WireError('varint too long');
  };
  while (pos < msg.length) {
    const key = varint();
    const no = Math.floor(key / 8);
    const wire = key & 7;
    if (wire === 0) yield { no, wire, int: varint() };
    else if (wire === 1) {
      if (pos + 8 > msg.length) throw new WireError('truncated fixed64');
      yield { no, wire, at: pos };
      pos += 8;
    } else if (wire === 5) {
      if (pos + 4 > msg.length) throw new WireError('truncated fixed32');
      yield { no, wire, at: pos };
      pos += 4;
    } else if (wire === 2) {
      const len = varint();
      if (pos + len > msg.length) throw new WireError('truncated bytes');
      yield { no, wire, bytes: msg.subarray(pos, pos + len) };
      pos += len;
    } else throw new WireError(`unsupported wire type ${wire}`);
  }
}

const dv = (m: Uint8Array) => new DataView(m.buffer, m.byteOffset, m.byteLength);
const utf8 = new TextDecoder();
/** An int64 varint as signed (negative steps are written as 10-byte two's complement). */
const signed64 = (n: number) => (n >= 2 ** 63 ? n - 2 ** 64 : n);

const DT_FLOAT = 1;
const DT_DOUBLE = 2;
const DT_INT32 = 3;
const DT_INT64 = 9;
const DT_HALF = 19;
const DT_BFLOAT16 = 14;

function half(bits: number): number {
  const s = bits & 0x8000 ? -1 : 1;
  const e = (bits >> 10) & 0x1f;
  const f = bits & 0x3ff;
  if (e === 0) return s * 2 ** -14 * (f / 1024);
  if (e === 31) return f ? NaN : s * Infinity;
  return s * 2 ** (e - 15) * (1 + f / 1024);
}

/** The value of a rank-0 numeric TensorProto, or null (a string, a histogram, an image: not a scalar). */
function tensorScalar(t: Uint8Array): number | null {
  let dtype = 0;
  let rank = 0;
  const values: number[] = [];
  let content: Uint8Array | undefined;
  const packed = (f: Field, read: (d: DataView, i: number) => number, size: number) => {
    if (f.bytes) for (let i = 0; i + size <= f.bytes.length; i += size) values.push(read(dv(f.bytes), i));
    else if (f.at !== undefined) values.push(read(dv(t), f.at));
  };
  const packedVarint = (f: Field, map: (n: number) => number) => {
    if (f.int !== undefined) values.push(map(f.int));
    else if (f.bytes) for (const g of fields(varintList(f.bytes))) if (g.int !== undefined) values.push(map(g.int));
  };
  for (const f of fields(t)) {
    if (f.no === 1 && f.int !== undefined) dtype = f.int;
    else if (f.no === 2 && f.bytes) rank = tensorRank(f.bytes);
    else if (f.no === 4 && f.bytes) content = f.bytes;
    else if (f.no === 5) packed(f, (d, i) => d.getFloat32(i, true), 4);
    else if (f.no === 6) packed(f, (d, i) => d.getFloat64(i, true), 8);
    else if (f.no === 7 || f.no === 13)
      packedVarint(f, (n) => (dtype === DT_HALF ? half(n) : dtype === DT_BFLOAT16 ? bf16(n) : n | 0));
    else if (f.no === 10) packedVarint(f, signed64);
  }
  if (rank > 0) return null;
  if (content && content.length) {
    const d = dv(content);
    if (dtype === DT_FLOAT && content.length === 4) return d.getFloat32(0, true);
    if (dtype === DT_DOUBLE && content.length === 8) return d.getFloat64(0, true);
    if (dtype === DT_INT32 && content.length === 4) return d.getInt32(0, true);
    if (dtype === DT_INT64 && content.length === 8) return Number(d.getBigInt64(0, true));
    if (dtype === DT_HALF && content.length === 2) return half(d.getUint16(0, true));
    if (dtype === DT_BFLOAT16 && content.length === 2) return bf16(d.getUint16(0, true));
    return null;
  }
  if (![DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_HALF, DT_BFLOAT16].includes(dtype)) return null;
  return values.length === 1 ? values[0] : null;
}

/** Dimensions of a TensorShapeProto other than 1 (a shape of [1] holds one value, as a scalar does). */
function tensorRank(shape: Uint8Array): number {
  let rank = 0;
  for (const d of fields(shape)) {
    if (d.no !== 2 || !d.bytes) continue;
    let size = 0;
    for (const s of fields(d.bytes)) if (s.no === 1 && s.int !== undefined) size = s.int;
    if (size !== 1) rank++;
  }
  return rank;
}

function bf16(bits: number): number {
  const b = new DataView(new ArrayBuffer(4));
  b.setUint32(0, (bits & 0xffff) << 16);
  return b.getFloat32(0);
}

/** Packed varints are a bare run of varints: give each a field key (no 1, wire 0) so `fields` can read them. */
function varintList(bytes: Uint8Array): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < bytes.length; i++) {
    if (i === 0 || !(bytes[i - 1] & 0x80)) out.push(0x08);
    out.push(bytes[i]);
  }
  return Uint8Array.from(out);
}

/** SummaryMetadata.plugin_data.plugin_name. */
function pluginName(metadata: Uint8Array): string | undefined {
  for (const m of fields(metadata)) {
    if (m.no !== 1 || !m.bytes) continue;
    for (const p of fields(m.bytes)) if (p.no === 1 && p.bytes) return utf8.decode(p.bytes);
  }
  return undefined;
}

/**
 * The scalar points of one Event payload. `plugins` remembers each tag's plugin (TensorBoard writers send a tag's
 * metadata only with its first point): a tensor is a scalar series only under the "scalars" plugin (hparams, text,
 * histograms and plugin-less tensors are not), as TensorBoard charts them.
 */
export function eventScalars(payload: Uint8Array, plugins: Map<string, string>): ScalarPoint[] {
  let wallTime = 0;
  let step = 0;
  const out: ScalarPoint[] = [];
  const summaries: Uint8Array[] = [];
  for (const f of fields(payload)) {
    if (f.no === 1 && f.at !== undefined) wallTime = dv(payload).getFloat64(f.at, true);
    else if (f.no === 2 && f.int !== undefined) step = signed64(f.int);
    else if (f.no === 5 && f.bytes) summaries.push(f.bytes);
  }
  for (const summary of summaries)
    for (const v of fields(summary)) {
      if (v.no !== 1 || !v.bytes) continue;
      let tag = '';
      let value: number | null = null;
      let plugin: string | undefined;
      let tensor: Uint8Array | undefined;
      for (const f of fields(v.bytes)) {
        if (f.no === 1 && f.bytes) tag = utf8.decode(f.bytes);
        else if (f.no === 2 && f.at !== undefined) value = dv(v.bytes).getFloat32(f.at, true);
        else if (f.no === 8 && f.bytes) tensor = f.bytes;
        else if (f.no === 9 && f.bytes) plugin = pluginName(f.bytes) ?? plugin;
      }
      if (!tag) continue;
      if (plugin !== undefined && !plugins.has(tag)) plugins.set(tag, plugin);
      const known = plugins.get(tag);
      if (value === null && tensor && known === 'scalars') value = tensorScalar(tensor); // TensorBoard's rule: a tensor is a scalar series only under the scalars plugin
      if (value !== null) out.push({ tag, step, wallTime, value });
    }
  return out;
}

/** Every scalar of a whole event file's bytes (a test and a one-shot reader; the tail reads incrementally). */
export function readScalars(buf: Uint8Array): { points: ScalarPoint[]; corrupt?: RecordsRead['corrupt'] } {
  const { payloads, corrupt } = readRecords(buf);
  const plugins = new Map<string, string>();
  const points: ScalarPoint[] = [];
  for (const p of payloads) {
    try {
      points.push(...eventScalars(p, plugins));
    } catch {
      /* a record that frames and checksums but does not parse as an Event: not a scalar */
    }
  }
  return { points, corrupt };
}

/** Is `name` a TensorBoard event file (`events.out.tfevents.<time>.<host>…`)? */
export function isEventFileName(name: string): boolean {
  return /^events\.out\.tfevents\./.test(name);
}
