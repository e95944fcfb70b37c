// `-o` writes through what it names: a rename onto the path would turn a FIFO or a symbolic link into a regular file
// (the FIFO's reader getting 0 bytes while the command says it succeeded) and, as root, replace `/dev/full`'s device
// node. So a link's target is written (the link stays), a FIFO or character device is written through, and a write
// error is one `coa: …` line, exit 2. The built CLI in child processes, as a user runs it.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '../../..');
const bin = join(root, 'bin/coa.js');
const good = (id: string) =>
  JSON.stringify({ id, question: 'q', golden_answers: ['a'], response: '<think>t</think><answer>a</answer>' });

before(() => {
  if (!existsSync(join(root, 'dist/cli.js'))) {
    const b = spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], { cwd: root, encoding: 'utf8' });
    assert.equal(b.status, 0, b.stderr);
  }
});

function workDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'coa-out-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, [good('a'), good('b'), good('c')].join('\n') + '\n');
  return dir;
}

/** A child's exit code, stdout and stderr (no shell). */
function run(
  command: string,
  args: string[],
): { child: ReturnType<typeof spawn>; done: Promise<{ code: number | null; out: string; err: string }> } {
  const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')));
  return { child, done: new Promise((resolve) => child.on('close', (code) => resolve({ code, out, err }))) };
}

test('-o onto a FIFO writes through it: the reader gets every line, the FIFO stays a FIFO', async (t) => {
  const dir = workDir(t);
  const fifo = join(dir, 'out.fifo');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo');
  const reader = run('cat', [fifo]);
  t.after(() => reader.child.kill());
  const writer = await run(process.execPath, [bin, 'score', join(dir, 'in.jsonl'), '-o', fifo]).done;
  assert.equal(writer.code, 0, writer.err);
  assert.ok(lstatSync(fifo).isFIFO(), 'the FIFO was replaced by a regular file');
  const got = await reader.done;
  assert.deepEqual(
    got.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).id),
    ['a', 'b', 'c'],
  );
  assert.deepEqual(readdirSync(dir).sort(), ['in.jsonl', 'out.fifo'], 'no temporary file left');
});

test('-o onto a symbolic link writes its target and keeps the link', (t) => {
  const dir = workDir(t);
  const target = join(dir, 'real.jsonl');
  writeFileSync(target, 'old\n');
  const link = join(dir, 'latest.jsonl');
  symlinkSync(target, link);
  const r = spawnSync(
    process.execPath,
    [bin, 'convert', '--from', 'openai', join(root, 'examples/openai-chats.jsonl'), '-o', link],
    { cwd: root, encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.ok(lstatSync(link).isSymbolicLink(), 'the link was replaced by a regular file');
  assert.ok(readFileSync(target, 'utf8').startsWith('{"id":"chat-1"'), 'the target holds the output');
  // A link to nothing is refused (what it should create is the user's call), and nothing is created.
  const dangling = join(dir, 'dangling.jsonl');
  symlinkSync(join(dir, 'missing', 'x.jsonl'), dangling);
  const d = spawnSync(process.execPath, [bin, 'score', join(dir, 'in.jsonl'), '-o', dangling], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.equal(d.status, 2);
  assert.equal(
    d.stderr,
    `coa: ${dangling}: is a symbolic link to a missing file; give the file itself as the output\n`,
  );
  assert.ok(lstatSync(dangling).isSymbolicLink());
});

/**
 * Character devices to write to: as root, nodes made in the test's own directory (a regression that replaced the
 * target must never replace the machine's /dev/null); otherwise the real ones, which only root could replace.
 */
function devices(dir: string): { nul: string; full: string } {
  if (process.getuid?.() !== 0) return { nul: '/dev/null', full: '/dev/full' };
  const nul = join(dir, 'null');
  const full = join(dir, 'full');
  for (const [path, minor] of [
    [nul, '3'],
    [full, '7'],
  ])
    assert.equal(spawnSync('mknod', [path, 'c', '1', minor]).status, 0, `mknod ${path}`);
  return { nul, full };
}

test('-o onto character devices: a null device is written through; a full one is a clear error, exit 2, device kept', (t) => {
  const dir = workDir(t);
  const { nul, full } = devices(dir);
  const toNull = spawnSync(process.execPath, [bin, 'score', join(dir, 'in.jsonl'), '-o', nul], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.equal(toNull.status, 0, toNull.stderr);
  assert.ok(statSync(nul).isCharacterDevice(), 'the device node was replaced');
  const toFull = spawnSync(process.execPath, [bin, 'score', join(dir, 'in.jsonl'), '-o', full], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.equal(toFull.status, 2, toFull.stderr);
  assert.equal(
    toFull.stderr
      .split('\n')
      .filter((l) => l.startsWith('coa:'))
      .join('\n'),
    `coa: cannot write ${full}: no space left on device`,
  );
  assert.doesNotMatch(toFull.stderr, /\n\s+at |node:internal/);
  assert.ok(statSync(full).isCharacterDevice(), 'the device node was replaced');
});
