// An output file written line by line waits for 'drain' whenever the stream's buffer is full. Each wait used to leave a
// 'close' and an 'error' listener behind, so every `coa convert` / `coa data prepare` of a real dataset printed
// MaxListenersExceededWarning (and the trainer, which runs `data prepare`, repeated it as warning events).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LineWriter } from '../../../src/cli/output';

const root = join(__dirname, '../../..');
const autocoa = join(root, 'examples/data/autocoa');

before(() => {
  if (!existsSync(join(root, 'dist/cli.js'))) {
    const b = spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], { cwd: root, encoding: 'utf8' });
    assert.equal(b.status, 0, b.stderr);
  }
});

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'coa-listeners-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('waiting for drain leaves no listener behind, however often the buffer fills', async (t) => {
  const out = join(tempDir(t), 'big.jsonl');
  const w = new LineWriter(out);
  const stream = (w as unknown as { stream: NodeJS.EventEmitter }).stream;
  const baseline = { close: stream.listenerCount('close'), error: stream.listenerCount('error') };
  const line = 'x'.repeat(20_000); // past the 16 KiB high-water mark: every write waits for drain
  for (let i = 0; i < 200; i++) {
    await w.write(`${i} ${line}`);
    assert.equal(stream.listenerCount('close'), baseline.close, `close listeners after write ${i}`);
    assert.equal(stream.listenerCount('error'), baseline.error, `error listeners after write ${i}`);
    assert.equal(stream.listenerCount('drain'), 0, `drain listeners after write ${i}`);
  }
  await w.close();
  const lines = readFileSync(out, 'utf8').trimEnd().split('\n');
  assert.equal(lines.length, 200);
  assert.equal(lines[199], `199 ${line}`);
});

function cli(args: string[], cwd: string) {
  return spawnSync(process.execPath, [join(root, 'bin/coa.js'), ...args], { cwd, encoding: 'utf8' });
}

test("convert and data prepare of AutoCoA's parquet print no listener warning", (t) => {
  const dir = tempDir(t);
  const convert = cli(
    ['convert', join(autocoa, 'all_test.parquet'), '--from', 'verl-parquet', '-o', 'test.coa.jsonl'],
    dir,
  );
  assert.equal(convert.status, 0, convert.stderr);
  assert.doesNotMatch(convert.stderr, /MaxListenersExceeded|Warning/);
  assert.match(convert.stderr, /2935 records written/);
  const prepare = cli(
    ['data', 'prepare', 'questions', join(autocoa, 'hotpotqa_train.parquet'), '--out', 'train.jsonl'],
    dir,
  );
  assert.equal(prepare.status, 0, prepare.stderr);
  assert.doesNotMatch(prepare.stderr, /MaxListenersExceeded|Warning/);
  assert.equal(readFileSync(join(dir, 'train.jsonl'), 'utf8').trimEnd().split('\n').length, 6144);
});
