// Fuzz the CLI in-process: files of valid records, cut and spliced lines, 5,000+-level nesting, BOMs,
// invalid UTF-8, NUL and CR bytes, through validate, score and stats. Property: every run ends with an exit code
// or a CliError (one `coa: …` line) — never another exception, never a line left unreported.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { main } from '../../../src/cli/main';
import { CliError } from '../../../src/cli/args';

const root = join(__dirname, '../../..');
const EXAMPLES = readFileSync(join(root, 'examples/trajectories.coa.jsonl'), 'utf8').split('\n').filter(Boolean);
const dir = mkdtempSync(join(tmpdir(), 'coa-cli-fuzz-'));

const bytes = (s: string) => Buffer.from(s, 'utf8');
const piece = fc.oneof(
  fc.constantFrom(...EXAMPLES).map(bytes),
  fc.tuple(fc.constantFrom(...EXAMPLES), fc.nat(), fc.nat(), fc.string({ maxLength: 8 })).map(([l, a, b, s]) => {
    const i = a % (l.length + 1);
    return bytes(l.slice(0, i) + s + l.slice(Math.min(l.length, i + (b % 20))));
  }),
  fc.tuple(fc.integer({ min: 5000, max: 8000 }), fc.boolean(), fc.boolean()).map(([n, arr, rec]) => {
    const nest = arr ? '['.repeat(n) + ']'.repeat(n) : '{"a":'.repeat(n) + '0' + '}'.repeat(n);
    return bytes(rec ? `{"id":"d","question":"q","response":"<answer>a</answer>","x":${nest}}` : nest);
  }),
  fc.constantFrom(
    Buffer.from([0xef, 0xbb, 0xbf]),
    Buffer.from([0xc3, 0x28]),
    Buffer.from([0xff]),
    Buffer.from([0xed, 0xa0, 0x80]),
    Buffer.from([0xf0, 0x9f, 0x98]),
    Buffer.from([0x0d]),
    Buffer.from([0x00]),
  ),
  fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b)),
);
const file = fc
  .array(
    fc.array(piece, { minLength: 1, maxLength: 3 }).map((ps) => Buffer.concat(ps)),
    { maxLength: 8 },
  )
  .chain((lines) =>
    fc
      .boolean()
      .map((bom) =>
        Buffer.concat([
          bom ? Buffer.from([0xef, 0xbb, 0xbf]) : Buffer.alloc(0),
          ...lines.flatMap((l) => [l, Buffer.from('\n')]),
        ]),
      ),
  );

async function quietly(argv: string[]): Promise<{ code?: number; error?: unknown; out: string }> {
  const log = console.log;
  const err = console.error;
  let out = '';
  console.log = (...a: unknown[]) => void (out += `${a.join(' ')}\n`);
  console.error = (...a: unknown[]) => void (out += `${a.join(' ')}\n`);
  try {
    return { code: await main(argv), out };
  } catch (error) {
    return { error, out };
  } finally {
    console.log = log;
    console.error = err;
  }
}

test('fuzz: validate, score and stats never crash on hostile files', async () => {
  let n = 0;
  let inputs = 0;
  await fc.assert(
    fc.asyncProperty(file, async (content) => {
      const path = join(dir, `f${n++}.jsonl`);
      writeFileSync(path, content);
      for (const argv of [
        ['validate', path],
        ['score', path, '--scheme', 'otc-grpo', '-o', `${path}.scored`],
        ['stats', path, '--json'],
      ]) {
        inputs++;
        const r = await quietly(argv);
        if (r.error !== undefined) {
          assert.ok(r.error instanceof CliError, `${argv.join(' ')} crashed: ${(r.error as Error)?.stack}`);
          // The only refusal of a whole file: binary data (a NUL in its first 8 KiB).
          assert.ok(content.subarray(0, 8192).includes(0), `${argv.join(' ')}: ${(r.error as Error).message}`);
        } else assert.ok(r.code === 0 || r.code === 1, `${argv.join(' ')} → ${r.code}`);
        assert.doesNotMatch(r.out, /RangeError|internal error/);
      }
    }),
    { numRuns: 150, seed: 18 },
  );
  assert.equal(inputs, 450);
});
