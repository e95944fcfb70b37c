// EventTail on real files that are appended to, truncated and replaced while being read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventTail, followEvents, formatIssue, type TailBatch } from '../../../src/core/eventTail';

const FIXTURE = join(__dirname, '../../fixtures/live-panel/tiny-pretrain-sft1.events.jsonl');

function dir(): string {
  return mkdtempSync(join(tmpdir(), 'coa-tail-'));
}

function metrics(step: number, extra: Record<string, number | null> = {}): string {
  return JSON.stringify({
    v: 1,
    time: 1_700_000_000 + step,
    run: 'r',
    type: 'metrics',
    stage: 'pretrain',
    step,
    values: { loss: 1 / (step + 1), ...extra },
  });
}

test('a finished run recorded from the trainer reads completely, every line valid', async () => {
  const lines = readFileSync(FIXTURE, 'utf8')
    .split('\n')
    .filter((l) => l.trim());
  const tail = new EventTail(FIXTURE);
  const batch = await tail.read();
  assert.equal(batch.issues.length, 0, batch.issues.map(formatIssue).join('\n'));
  assert.equal(batch.events.length, lines.length);
  assert.equal(batch.events[0].type, 'run_started');
  assert.equal(tail.position, readFileSync(FIXTURE).length);
  const again = await tail.read();
  assert.equal(again.events.length, 0);
  assert.equal(again.reset, false);
});

test('a partial last line is held until its newline, even when it splits a UTF-8 character', async () => {
  const d = dir();
  const file = join(d, 'events.jsonl');
  try {
    const tail = new EventTail(file);
    assert.deepEqual(await tail.read(), { reset: false, events: [], issues: [] }); // not created yet
    const line = JSON.stringify({ v: 1, time: 1, run: 'r', type: 'log', level: 'info', message: 'naïve → ok ✓' });
    const bytes = Buffer.from(line + '\n', 'utf8');
    const cut = bytes.indexOf(Buffer.from('→', 'utf8')) + 1; // inside the 3-byte arrow
    writeFileSync(file, bytes.subarray(0, cut));
    let b = await tail.read();
    assert.equal(b.events.length, 0);
    assert.equal(b.issues.length, 0);
    appendFileSync(file, bytes.subarray(cut, bytes.length - 1)); // everything but the newline
    b = await tail.read();
    assert.equal(b.events.length, 0);
    appendFileSync(file, '\n' + metrics(1) + '\r\n' + metrics(2).slice(0, 10));
    b = await tail.read();
    assert.equal(b.events.length, 2);
    assert.equal(b.events[0].type === 'log' && b.events[0].message, 'naïve → ok ✓');
    assert.equal(b.issues.length, 0);
    appendFileSync(file, metrics(2).slice(10) + '\n');
    b = await tail.read();
    assert.deepEqual(
      b.events.map((e) => e.type === 'metrics' && e.step),
      [2],
    );
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

test('a malformed event is reported once with file:line:column and skipped', async () => {
  const d = dir();
  const file = join(d, 'events.jsonl');
  try {
    writeFileSync(
      file,
      [metrics(1), '{"v": 1, "time": 2, oops}', '', metrics(3).replace('"metrics"', '"metricz"'), metrics(4)].join(
        '\n',
      ) + '\n',
    );
    const tail = new EventTail(file);
    const b = await tail.read();
    assert.deepEqual(
      b.events.map((e) => e.type === 'metrics' && e.step),
      [1, 4],
    );
    assert.equal(b.issues.length, 2);
    assert.equal(b.issues[0].line, 2);
    assert.equal(b.issues[0].column, 21); // the `o` of `oops`
    assert.match(formatIssue(b.issues[0]), /events\.jsonl:2:21: invalid JSON/);
    assert.equal(b.issues[1].line, 4);
    assert.match(b.issues[1].message, /type/);
    appendFileSync(file, metrics(5) + '\n');
    const again = await tail.read();
    assert.equal(again.issues.length, 0, 'not reported twice');
    assert.deepEqual(
      again.events.map((e) => e.type === 'metrics' && e.step),
      [5],
    );
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

test('truncation and replacement restart from the top with reset', async () => {
  const d = dir();
  const file = join(d, 'events.jsonl');
  try {
    writeFileSync(file, [1, 2, 3].map((s) => metrics(s)).join('\n') + '\n');
    const tail = new EventTail(file);
    assert.equal((await tail.read()).events.length, 3);
    // Truncated in place, then a new run writes one line.
    truncateSync(file, 0);
    appendFileSync(file, metrics(10) + '\n');
    let b = await tail.read();
    assert.equal(b.reset, true);
    assert.deepEqual(
      b.events.map((e) => e.type === 'metrics' && e.step),
      [10],
    );
    // Replaced by rename (rotation): the new file is longer than what was consumed, only its inode tells.
    const next = join(d, 'events.jsonl.new');
    writeFileSync(next, [20, 21, 22, 23].map((s) => metrics(s)).join('\n') + '\n');
    renameSync(next, file);
    b = await tail.read();
    assert.equal(b.reset, true);
    assert.deepEqual(
      b.events.map((e) => e.type === 'metrics' && e.step),
      [20, 21, 22, 23],
    );
    // Rewritten in place to a larger size (same inode): the first bytes differ.
    writeFileSync(file, [30, 31, 32, 33, 34].map((s) => metrics(s)).join('\n') + '\n');
    b = await tail.read();
    assert.equal(b.reset, true);
    assert.deepEqual(
      b.events.map((e) => e.type === 'metrics' && e.step),
      [30, 31, 32, 33, 34],
    );
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

test('followEvents sees every event of a file appended while it runs (created after the follower starts)', async () => {
  const d = dir();
  const file = join(d, 'events.jsonl');
  const got: number[] = [];
  const batches: TailBatch[] = [];
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  const total = 500;
  const follower = followEvents(file, {
    intervalMs: 20,
    onBatch: (b) => {
      batches.push(b);
      for (const e of b.events) if (e.type === 'metrics') got.push(e.step);
      if (got.length >= total) resolveDone();
    },
  });
  try {
    // Append in uneven pieces that cut lines anywhere, with pauses so reads interleave with writes.
    const text = Array.from(
      { length: total },
      (_, i) => metrics(i + 1, { reward_mean: i % 7 === 0 ? null : i / total }) + '\n',
    ).join('');
    let pos = 0;
    let piece = 1;
    while (pos < text.length) {
      piece = (piece * 7919) % 4093;
      appendFileSync(file, text.slice(pos, pos + piece + 1));
      pos += piece + 1;
      await new Promise((r) => setTimeout(r, 2));
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`only ${got.length} of ${total}`)), 20_000)),
    );
    await Promise.race([done, timeout]).finally(() => clearTimeout(timer));
    await follower.flush();
    assert.deepEqual(
      got,
      Array.from({ length: total }, (_, i) => i + 1),
    );
    assert.equal(batches.flatMap((b) => b.issues).length, 0);
    assert.ok(batches.length > 1, 'read in several batches while being written');
  } finally {
    follower.dispose();
    rmSync(d, { recursive: true, force: true });
  }
});

// ---- exactly-once events across resume, the reader's half (the writer's is test_reliability.py)

test("a resume that drops the redone steps (the trainer's own rewrite) reaches a live tail as a reset, then once each", async () => {
  const python = join(__dirname, '../../../.venv/bin/python');
  // No skip: the trainer writes the rewrite, and `npm install` makes its .venv (a suite green without it proves nothing).
  assert.ok(existsSync(python), `${python} is missing: run npm install (it creates the trainer's .venv)`);
  const d = dir();
  const file = join(d, 'events.jsonl');
  try {
    const ev = (type: string, step: number, extra: object = {}) =>
      JSON.stringify({ v: 1, time: step, run: 'r', type, stage: 'sft2', step, ...extra });
    const m = (step: number, loss: number) => ev('metrics', step, { values: { loss } });
    // The killed run: steps 1..6, a checkpoint after step 4 (its file offset is what the checkpoint records).
    writeFileSync(file, [1, 2, 3, 4].map((s) => m(s, s)).join('\n') + '\n');
    const offset = readFileSync(file).length;
    appendFileSync(file, ev('checkpoint', 4, { path: 'c' }) + '\n' + [5, 6].map((s) => m(s, s)).join('\n') + '\n');
    // A live reader (the panel) has seen all of it, duplicates-to-be included.
    const tail = new EventTail(file);
    let seen: TailBatch['events'] = [...(await tail.read()).events];
    assert.equal(seen.length, 7);
    // The resumed stage: the trainer's EventWriter drops steps 5, 6 written after the checkpoint, then redoes them.
    const script = `import sys; from coa_trainer.base.events import EventWriter
w = EventWriter(sys.argv[1], echo=None)
print(w.supersede("sft2", 4, int(sys.argv[2])))`;
    const r = spawnSync(python, ['-c', script, d, String(offset)], {
      encoding: 'utf8',
      env: { ...process.env, PYTHONPATH: join(__dirname, '../../../src/trainer') },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), '2');
    appendFileSync(file, [5, 6, 7].map((s) => m(s, s * 10)).join('\n') + '\n');
    const batch = await tail.read();
    assert.equal(batch.reset, true, 'the rewrite is a new file: the reader starts again from the top');
    seen = batch.events;
    const keys = seen.map((e) => `${e.type}/${'stage' in e ? e.stage : ''}/${'step' in e ? e.step : ''}`);
    assert.equal(new Set(keys).size, keys.length, `duplicates: ${keys.join(' ')}`);
    assert.deepEqual(
      seen.flatMap((e) => (e.type === 'metrics' ? [[e.step, e.values.loss]] : [])),
      [
        [1, 1],
        [2, 2],
        [3, 3],
        [4, 4],
        [5, 50],
        [6, 60],
        [7, 70],
      ],
    );
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});
