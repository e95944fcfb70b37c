// TensorBoard event files read without TensorFlow (src/core/tensorboard): files written by the real writers
// (test/fixtures/tensorboard/generate.py: torch's SummaryWriter, tensorboard.summary.Writer, TensorFlow-2-style
// tensor_content) must give exactly what TensorBoard's own EventAccumulator read from them (expected.json); a
// file read while it is being written gives the same points in the end; corruption stops reading at the bad record.
import { strict as assert } from 'node:assert';
import {
  appendFileSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { crc32c, readRecords, readScalars } from '../../../src/core/tensorboard/tfevents';
import { isTensorBoardRunDir, TensorBoardTail } from '../../../src/core/tensorboard/runTail';
import type { TrainerEvent } from '../../../src/core/events';

const FIXTURES = join(__dirname, '../../fixtures/tensorboard');
const expected = JSON.parse(readFileSync(join(FIXTURES, 'expected.json'), 'utf8')) as Record<
  string,
  Record<string, [number, number][]>
>;
const eventFile = (run: string) =>
  join(FIXTURES, run, readdirSync(join(FIXTURES, run)).find((n) => n.startsWith('events.out.tfevents.'))!);

function byTag(points: { tag: string; step: number; value: number }[]): Record<string, [number, number][]> {
  const out: Record<string, [number, number][]> = {};
  for (const p of points) (out[p.tag] ??= []).push([p.step, p.value]);
  return out;
}

function metricsByTag(events: TrainerEvent[]): Record<string, [number, number][]> {
  const out: Record<string, [number, number][]> = {};
  for (const e of events)
    if (e.type === 'metrics')
      for (const [k, v] of Object.entries(e.values)) (out[k] ??= []).push([e.step, v as number]);
  return out;
}

test('CRC-32C of the standard check value', () => {
  assert.equal(crc32c(Buffer.from('123456789')), 0xe3069283);
});

for (const run of Object.keys(expected)) {
  test(`${run}: every scalar TensorBoard reads, and nothing else (histograms, text, hparams)`, () => {
    const { points, corrupt } = readScalars(readFileSync(eventFile(run)));
    assert.equal(corrupt, undefined);
    assert.deepEqual(byTag(points), expected[run]);
  });
}

test('a file read while being written: a read that ends mid-record keeps the rest; in the end every point, one metrics event per step', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'coa-tb-')), 'rl2');
  mkdirSync(dir);
  const bytes = readFileSync(eventFile('torch'));
  const file = join(dir, 'events.out.tfevents.1.host');
  const cut = Math.floor(bytes.length * 0.6);
  writeFileSync(file, bytes.subarray(0, cut));
  assert.ok(isTensorBoardRunDir(dir));
  const tail = new TensorBoardTail(dir);
  const first = await tail.read();
  assert.ok(first.events.length > 0 && first.issues.length === 0);
  appendFileSync(file, bytes.subarray(cut));
  const second = await tail.read();
  const all = [...first.events, ...second.events];
  assert.equal(all[0].type, 'run_started', 'the panel says where the run comes from');
  assert.ok(all.slice(1).every((e) => e.type === 'metrics' && e.stage === 'rl2' && e.run === 'rl2'));
  const merged = metricsByTag(all);
  for (const tag of Object.keys(merged)) merged[tag].sort((a, b) => a[0] - b[0]);
  assert.deepEqual(merged, expected.torch);
  // torch writes one record per add_scalar: the three tags of a step arrive as one metrics event
  assert.equal(all.filter((e) => e.type === 'metrics' && e.step === 3 && Object.keys(e.values).length === 3).length, 1);
  assert.deepEqual((await tail.read()).events, []);
  // a second file (a restarted writer) is read too; a replaced file resets
  copyFileSync(eventFile('tensorboard'), join(dir, 'events.out.tfevents.2.host'));
  assert.deepEqual(metricsByTag((await tail.read()).events), expected.tensorboard);
  writeFileSync(file, bytes.subarray(0, 200));
  const again = await tail.read();
  assert.equal(again.reset, true);
  assert.equal(again.events[0]?.type, 'run_started');
});

test('a corrupt record stops reading that file with one issue naming the byte; the records before it stand', async () => {
  const bytes = Buffer.from(readFileSync(eventFile('tensorboard')));
  const whole = readRecords(bytes);
  const third = whole.payloads.slice(0, 2).reduce((n, p) => n + 12 + p.length + 4, 0);
  bytes[third + 14] ^= 0xff; // inside the third record's data
  const read = readRecords(bytes);
  assert.equal(read.payloads.length, 2);
  assert.equal(read.corrupt?.offset, third);
  assert.match(read.corrupt!.message, /data checksum/);
  const dir = mkdtempSync(join(tmpdir(), 'coa-tb-bad-'));
  writeFileSync(join(dir, 'events.out.tfevents.9.host'), bytes);
  const tail = new TensorBoardTail(dir);
  const batch = await tail.read();
  assert.equal(batch.issues.length, 1);
  assert.match(batch.issues[0].message, new RegExp(`at byte ${third}`));
  assert.deepEqual((await tail.read()).issues, [], 'reported once');
});

test('not a TensorBoard folder, or no folder at all', async () => {
  assert.equal(isTensorBoardRunDir(FIXTURES), false);
  assert.equal(isTensorBoardRunDir(join(FIXTURES, 'nope')), false);
  assert.deepEqual(await new TensorBoardTail(join(FIXTURES, 'nope')).read(), { reset: false, events: [], issues: [] });
});
