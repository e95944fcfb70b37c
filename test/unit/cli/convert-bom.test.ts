// A file saved with a UTF-8 byte order mark (Notepad, some exporters) keeps its first record in
// `coa convert --from openai|verl-rollouts`: left in place, the BOM would make line 1 invalid JSON, reported and
// skipped.
// The built CLI in a child process, on the repository's own example files with a BOM put in front.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '../../..');
const coa = (...args: string[]) =>
  spawnSync(process.execPath, [join(root, 'bin/coa.js'), ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });
const lines = (file: string) => readFileSync(file, 'utf8').trim().split('\n');

before(() => {
  if (!existsSync(join(root, 'dist/cli.js'))) {
    const b = spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], { cwd: root, encoding: 'utf8' });
    assert.equal(b.status, 0, b.stderr);
  }
});

for (const [from, source] of [
  ['openai', 'examples/openai-chats.jsonl'],
  ['verl-rollouts', 'test/fixtures/verl/rollouts/1.jsonl'],
] as const) {
  test(`convert --from ${from}: a BOM before line 1 keeps record 1`, (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'coa-bom-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const plain = join(dir, 'plain.jsonl');
    const bom = join(dir, 'bom.jsonl');
    writeFileSync(plain, readFileSync(join(root, source)));
    writeFileSync(bom, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), readFileSync(join(root, source))]));
    const a = coa('convert', '--from', from, plain, '-o', join(dir, 'plain.coa.jsonl'));
    const b = coa('convert', '--from', from, bom, '-o', join(dir, 'bom.coa.jsonl'));
    assert.equal(a.status, 0, a.stderr);
    assert.equal(b.status, 0, b.stderr);
    assert.doesNotMatch(b.stderr, /skipped/, 'no line is skipped');
    assert.deepEqual(
      lines(join(dir, 'bom.coa.jsonl')),
      lines(join(dir, 'plain.coa.jsonl')),
      'the same records as without the BOM',
    );
  });
}
