// Seeded hostile inputs for the config and data-line fuzz (test/unit/cli/config-fuzz.test.ts runs a slice,
// bench/reliability/run.ts the full 10,000+): run configs as files — valid settings of the run-config schema mutated
// into non-finite and huge numbers, wrong types, unknown keys, deep nesting, bad shapes, BOMs, invalid UTF-8, cut and
// spliced text — and JSONL files of trajectory records mutated the same way. The same seed gives the same files.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeRandom } from '../../src/env/random';

const ROOT = join(__dirname, '../..');

type Rnd = () => number;
type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
const pick = <T>(rnd: Rnd, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
const int = (rnd: Rnd, lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));

/** A number token written as is into the file (JSON.stringify would write Infinity as null). */
const RAW = '\u0001raw:';
const raw = (token: string) => `${RAW}${token}\u0001`;
const withRawTokens = (text: string) => text.replace(/"\\u0001raw:([^"\\]*)\\u0001"/g, '$1');

/** A leaf setting of the run-config schema: its path and what kind of value it takes. */
interface Leaf {
  path: string[];
  kind: 'number' | 'integer' | 'string' | 'boolean' | 'enum' | 'array' | 'other';
  values?: unknown[];
  min?: number;
  max?: number;
}

function leavesOf(schema: Record<string, unknown>): Leaf[] {
  const out: Leaf[] = [];
  const visit = (node: Record<string, unknown>, path: string[]): void => {
    const props = node.properties as Record<string, Record<string, unknown>> | undefined;
    if (props) {
      for (const [k, sub] of Object.entries(props)) visit(sub, [...path, k]);
      return;
    }
    const branches = (node.anyOf as Record<string, unknown>[] | undefined)?.filter((b) => b.type !== 'null');
    const n = branches?.length === 1 ? branches[0] : node;
    if (n.properties) return visit(n, path);
    const kind = n.enum
      ? 'enum'
      : n.type === 'number' || n.type === 'integer' || n.type === 'string' || n.type === 'boolean' || n.type === 'array'
        ? (n.type as Leaf['kind'])
        : 'other';
    const num = (k: string) => (typeof n[k] === 'number' ? (n[k] as number) : undefined);
    out.push({
      path,
      kind,
      values: n.enum as unknown[] | undefined,
      min: num('minimum') ?? num('exclusiveMinimum'),
      max: num('maximum') ?? num('exclusiveMaximum'),
    });
  };
  visit(schema, []);
  return out;
}

let leafCache: Leaf[] | null = null;
function leaves(): Leaf[] {
  return (leafCache ??= leavesOf(JSON.parse(readFileSync(join(ROOT, 'schemas/run-config.schema.json'), 'utf8'))));
}

/** A plausible value for a leaf (often valid). */
function goodValue(rnd: Rnd, leaf: Leaf): Json {
  switch (leaf.kind) {
    case 'enum':
      return pick(rnd, leaf.values as Json[]);
    case 'boolean':
      return rnd() < 0.5;
    case 'integer':
      return int(rnd, Math.max(0, Math.ceil(leaf.min ?? 0)), Math.min(leaf.max ?? 64, 64));
    case 'number': {
      const lo = leaf.min ?? 0;
      const hi = Math.min(leaf.max ?? 10, 10);
      return lo + rnd() * (hi - lo);
    }
    case 'string':
      return pick(rnd, ['x', 'run', 'data/train.jsonl', '', 'question : {question}\n', 'dist/cli.js']);
    case 'array':
      return pick(rnd, [[], ['dev'], ['coa', 'cot'], ['q_proj']]);
    default:
      return pick(rnd, [null, {}, 'x']);
  }
}

/** Numbers that broke something somewhere, and their neighbours. */
const NUMBER_ATTACKS = [
  raw('1e999'),
  raw('-1e999'),
  raw('1e300'),
  raw('-1e300'),
  raw('5e-324'),
  raw('-0'),
  raw('1e-400'),
  raw('NaN'),
  raw('Infinity'),
  raw('-Infinity'),
  raw('123456789012345678901234567890'),
  raw('9007199254740993'),
  raw('1E2'),
  raw('0.1e1'),
  0,
  -1,
  1,
  1.5,
  1000,
  1001,
  1e-3,
  9.99e-4,
  2 ** 31,
  2 ** 53 - 1,
  2 ** 53,
  1e16,
  1e9,
  3e9,
  30 * 24 * 3600 + 1,
] as const;
const TYPE_ATTACKS: Json[] = [
  null,
  true,
  false,
  '',
  '1e999',
  'NaN',
  [],
  [1, 2],
  {},
  { a: 1 },
  '\u0000',
  '\ud800',
  'x'.repeat(5000),
];

function setPath(obj: Record<string, Json>, path: string[], value: Json): void {
  let node = obj;
  for (const k of path.slice(0, -1)) {
    const next = node[k];
    if (!next || typeof next !== 'object' || Array.isArray(next)) node[k] = {};
    node = node[k] as Record<string, Json>;
  }
  node[path[path.length - 1]] = value;
}

function nest(rnd: Rnd, depth: number): Json {
  const arrays = rnd() < 0.5;
  let v: Json = 0;
  for (let i = 0; i < depth; i++) v = arrays ? [v] : { a: v };
  return v;
}

/** Deep nesting as text (a built value of 100k levels would overflow JSON.stringify here). */
const nestText = (depth: number, arrays: boolean) =>
  arrays ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}0${'}'.repeat(depth)}`;

/** One run config file's bytes. */
export function hostileConfig(rnd: Rnd): Buffer {
  const ls = leaves();
  const config: Record<string, Json> = {};
  for (let i = int(rnd, 0, 6); i > 0; i--) {
    const leaf = pick(rnd, ls);
    setPath(config, leaf.path, goodValue(rnd, leaf));
  }
  let deepText: string | null = null;
  for (let m = int(rnd, 1, 3); m > 0; m--) {
    const leaf = pick(rnd, ls);
    const r = rnd();
    if (r < 0.4)
      setPath(
        config,
        leaf.path,
        leaf.kind === 'number' || leaf.kind === 'integer' || rnd() < 0.3
          ? pick(rnd, NUMBER_ATTACKS)
          : pick(rnd, TYPE_ATTACKS),
      );
    else if (r < 0.5)
      setPath(
        config,
        [...leaf.path.slice(0, -1), pick(rnd, ['extra', 'lrr', '__proto__', 'constructor', '$schema'])],
        pick(rnd, [1, 'x', null, {}]),
      );
    else if (r < 0.6) {
      // The embedded model's sizes, small and often not dividing.
      const sizes = ['hidden_size', 'num_heads', 'num_kv_heads', 'num_layers', 'intermediate_size', 'max_position'];
      for (let k = int(rnd, 1, 3); k > 0; k--)
        setPath(
          config,
          ['model', 'embedded', pick(rnd, sizes)],
          pick(rnd, [int(rnd, 0, 130), pick(rnd, NUMBER_ATTACKS)]),
        );
    } else if (r < 0.68) {
      const depth = pick(rnd, [10, 63, 64, 65, 100, 513, 600, 5000, rnd() < 0.1 ? 100_000 : 2000]);
      if (depth > 1000) deepText = nestText(depth, rnd() < 0.5);
      else setPath(config, leaf.path, nest(rnd, depth));
    } else if (r < 0.76) {
      // Reward parameters and alert thresholds: numbers inside records and nested settings.
      const stage = pick(rnd, ['rl1', 'rl2']);
      if (rnd() < 0.5)
        setPath(
          config,
          ['stages', stage, 'reward', 'params', pick(rnd, ['c', 'alpha', 'max_turns', 'tools', 'x'])],
          pick(rnd, [...NUMBER_ATTACKS, ...TYPE_ATTACKS]),
        );
      else
        setPath(
          config,
          [
            'stages',
            stage,
            'alerts',
            pick(rnd, ['tool_call_explosion', 'think_collapse', 'all_wrong_groups', 'window']),
          ],
          pick(rnd, NUMBER_ATTACKS),
        );
    } else if (r < 0.82) {
      // Data paths: missing files, NUL, very long, relative escapes (coa data check opens them; the trainer resolves them).
      const p = pick(rnd, [
        'missing.jsonl',
        'a\u0000b.jsonl',
        'x/'.repeat(3000) + 'f',
        '../../../../etc/passwd',
        '',
        '.',
        'loop',
      ]);
      setPath(config, ['data', pick(rnd, ['corpus', 'sft1_pairs'])], p);
      if (rnd() < 0.3) setPath(config, ['model', 'path'], p);
    } else setPath(config, leaf.path, pick(rnd, TYPE_ATTACKS));
  }
  let text = withRawTokens(JSON.stringify(config, null, rnd() < 0.5 ? 2 : undefined));
  if (deepText) text = text.replace(/\}\s*$/, `${text.trim() === '{}' ? '' : ','}"name":${deepText}}`);
  return textAttack(rnd, text);
}

/** Byte-level damage, sometimes: a BOM, invalid UTF-8, NUL, a cut, a splice, CRLF, an empty or non-object file. */
function textAttack(rnd: Rnd, text: string): Buffer {
  let b = Buffer.from(text, 'utf8');
  const r = rnd();
  if (r < 0.1) b = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), b]);
  else if (r < 0.18) {
    const at = int(rnd, 0, b.length);
    b = Buffer.concat([
      b.subarray(0, at),
      pick(rnd, [
        Buffer.from([0xff]),
        Buffer.from([0xc3, 0x28]),
        Buffer.from([0xed, 0xa0, 0x80]),
        Buffer.from([0xf0, 0x9f, 0x98]),
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from([0x00]),
      ]),
      b.subarray(at),
    ]);
  } else if (r < 0.23) b = b.subarray(0, int(rnd, 0, b.length));
  else if (r < 0.26) b = Buffer.from(text.replace(/\n/g, '\r\n'));
  else if (r < 0.28)
    b = Buffer.from(
      pick(rnd, [
        '',
        '   \n',
        '[]',
        '1e999',
        '"x"',
        'null',
        '{"seed": 1, "seed": 1e999}',
        '{"seed": 1} trailing',
        '{"seed": 1,}',
        '// c\n{}',
      ]),
    );
  return b;
}

let examples: string[] | null = null;
/** A JSONL file of trajectory records, `lines` of them, each maybe mutated. */
export function hostileDataFile(rnd: Rnd, lines: number): Buffer {
  examples ??= readFileSync(join(ROOT, 'examples/trajectories.coa.jsonl'), 'utf8').split('\n').filter(Boolean);
  const out: Buffer[] = [];
  for (let i = 0; i < lines; i++) {
    const record = JSON.parse(pick(rnd, examples)) as Record<string, Json>;
    const r = rnd();
    if (r < 0.25) {
      const where = pick(rnd, [
        ['meta', 'step'],
        ['meta', 'sample'],
        ['meta', 'group'],
        ['reward', 'total'],
        ['reward', 'em'],
        ['tokens'],
        ['golden_answers'],
        ['id'],
        ['question'],
        ['response'],
        ['x'],
      ]);
      setPath(
        record,
        where,
        pick(rnd, [...NUMBER_ATTACKS, ...TYPE_ATTACKS, nest(rnd, pick(rnd, [10, 511, 512, 513]))]),
      );
    }
    let text = withRawTokens(JSON.stringify(record));
    if (r >= 0.25 && r < 0.3)
      text = text.replace(
        /\}$/,
        `,"deep":${nestText(pick(rnd, [600, 5000, rnd() < 0.2 ? 100_000 : 3000]), rnd() < 0.5)}}`,
      );
    if (r >= 0.3 && r < 0.35)
      text =
        text.slice(0, int(rnd, 0, text.length)) +
        pick(rnd, ['', '"', '\\', '}', '\\u12']) +
        text.slice(int(rnd, 0, text.length));
    out.push(rnd() < 0.3 ? textAttack(rnd, text) : Buffer.from(text));
  }
  return Buffer.concat(out.flatMap((l, i) => [l, Buffer.from(i < out.length - 1 || rnd() < 0.7 ? '\n' : '')]));
}

/** `n` configs and `files` data files from one seed: the same seed, the same bytes. */
export function fuzzInputs(
  seed: number,
  n: number,
  files: number,
  linesPerFile = 5,
): { configs: Buffer[]; data: Buffer[] } {
  const rnd = makeRandom(seed);
  const configs = Array.from({ length: n }, () => hostileConfig(rnd));
  const data = Array.from({ length: files }, () => hostileDataFile(rnd, int(rnd, 1, linesPerFile * 2 - 1)));
  return { configs, data };
}
