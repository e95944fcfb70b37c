// Bad input (deep nesting, BOMs, invalid UTF-8), bad `-o` targets and `env serve`'s checks, as a user meets them:
// the built CLI in a child process.
// Every bad input is one `coa: …` or `file:line:col: …` line and a documented exit code — never a Node stack.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive } from '../../../src/cli/parentWatch';

const root = join(__dirname, '../../..');
const bin = join(root, 'bin/coa.js');
const dir = mkdtempSync(join(tmpdir(), 'coa-cli-rel-'));
const coa = (...args: string[]) => coaWith({}, ...args);
const coaWith = (env: NodeJS.ProcessEnv, ...args: string[]) => {
  const r = spawnSync(process.execPath, [bin, ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, ...env },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
};
const good = (id: string) =>
  JSON.stringify({ id, question: 'q', golden_answers: ['a'], response: '<think>t</think><answer>a</answer>' });
const NO_STACK = /internal error|\n\s+at |RangeError|node:internal/;

before(() => {
  if (!existsSync(join(root, 'dist/cli.js'))) {
    const b = spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], { cwd: root, encoding: 'utf8' });
    assert.equal(b.status, 0, b.stderr);
  }
});

test('score -o into a missing directory or onto a directory: one clear line, exit 2 (not 1, "problems found")', () => {
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, good('a') + '\n');
  const missing = coa('score', input, '-o', join(dir, 'no/such/dir/x.jsonl'));
  assert.equal(missing.code, 2, missing.err);
  assert.match(missing.err, /^coa: cannot write .*x\.jsonl: its directory does not exist\n$/);
  const onDir = coa('score', input, '-o', dir);
  assert.equal(onDir.code, 2, onDir.err);
  assert.match(onDir.err, /^coa: .*: is a directory, expected an output file\n$/);
  assert.ok(
    !readdirSync(join(dir, '..')).some((f) => f.startsWith(`${dir.split('/').pop()}.tmp-`)),
    'no temporary file left beside it',
  );
  // And a file it can write still works.
  const ok = coa('score', input, '-o', join(dir, 'out.jsonl'));
  assert.equal(ok.code, 0, ok.err);
});

test('validate/score/stats on 5,000-level nesting: file:line:col, no stack, later lines still checked', () => {
  const file = join(dir, 'deep.jsonl');
  const deepLine = `{"id":"d","question":"q","response":"r","x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
  writeFileSync(file, [good('a'), deepLine, '{"id":"b","question":"q","response":"<think>x"}'].join('\n') + '\n');
  const v = coa('validate', file);
  assert.equal(v.code, 1);
  assert.doesNotMatch(v.out + v.err, NO_STACK);
  assert.match(
    v.out,
    new RegExp(
      `deep\\.jsonl:2:${deepLine.indexOf('[') + 512}: error COA101 invalid JSON: nested deeper than 512 levels`,
    ),
  );
  assert.match(v.out, /deep\.jsonl:3:\d+: error COA001/);
  const s = coa('score', file, '-o', join(dir, 'deep.scored.jsonl'));
  assert.equal(s.code, 0, s.err);
  assert.doesNotMatch(s.err, NO_STACK);
  assert.equal(
    readFileSync(join(dir, 'deep.scored.jsonl'), 'utf8').split('\n')[1],
    deepLine,
    'the bad line is copied unchanged',
  );
  const st = coa('stats', file, '--json');
  assert.doesNotMatch(st.out + st.err, NO_STACK);
});

test('data check on a run config nested 100,000 levels deep: FILE:LINE:COL at the bracket past 64, exit 2, no stack', () => {
  // The parser's recursion once overflowed the stack here ("internal error: RangeError"); the bound is read first.
  const file = join(dir, 'deep.run.json');
  const prefix = '{"name": ';
  writeFileSync(file, `${prefix}${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
  const r = coa('data', 'check', file);
  assert.equal(r.code, 2, r.err);
  assert.doesNotMatch(r.out + r.err, NO_STACK);
  assert.equal(r.err.trim().split('\n').length, 1, r.err);
  assert.match(r.err, new RegExp(`deep\\.run\\.json:1:${prefix.length + 64}: .*nested deeper than 64 levels`));
});

test('data prepare on 5,000-level nesting: FILE:LINE:COL, exit 2, no stack', () => {
  const file = join(dir, 'deep-questions.jsonl');
  const prefix = '{"question":5,"golden_answers":["a"],"x":';
  writeFileSync(file, `{"question":"q?","golden_answers":["a"]}\n${prefix}${'['.repeat(6000)}${']'.repeat(6000)}}\n`);
  const r = coa('data', 'prepare', 'questions', file, '--out', join(dir, 'q.out.jsonl'));
  assert.equal(r.code, 2, r.err);
  assert.equal(
    r.err.trim(),
    `${file}:2:${prefix.length + 512}: error: record: not valid JSON here: nested deeper than 512 levels`,
  );
});

test('data prepare: invalid UTF-8 is an error at FILE:LINE:COL, never a silent U+FFFD; a BOM and CRLF are fine', () => {
  const cases = {
    questions: ['{"question":"q?","golden_answers":["a"]}', '{"question":"who '],
    sft: ['{"id":"a","question":"q?","response":"<answer>a</answer>"}', '{"question":"who '],
  };
  for (const [kind, [first, head]] of Object.entries(cases)) {
    const file = join(dir, `enc-${kind}.jsonl`);
    const bad = Buffer.concat([
      Buffer.from(head),
      Buffer.from([0xff]),
      Buffer.from(' is","id":"b","response":"<answer>x</answer>","golden_answers":["x"]}'),
    ]);
    writeFileSync(
      file,
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`${first}\r\n\r\n`), bad, Buffer.from('\n')]),
    );
    const out = join(dir, `enc-${kind}.out.jsonl`);
    const r = coa('data', 'prepare', kind, file, '--out', out);
    assert.equal(r.code, 2, r.err);
    assert.equal(r.err.trim(), `${file}:3:18: error: record: invalid UTF-8: byte 0xff at byte 18 of the line`);
    assert.ok(!existsSync(out), 'nothing written');
  }
  const ok = join(dir, 'enc-ok.jsonl');
  writeFileSync(
    ok,
    Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from(
        '{"question":"q?","golden_answers":["a"]}\r\n\r\n{"question":"caf\u00e9 \ufffd?","golden_answers":["b"]}\r\n',
      ),
    ]),
  );
  const out = join(dir, 'enc-ok.out.jsonl');
  const r = coa('data', 'prepare', 'questions', ok, '--out', out);
  assert.equal(r.code, 0, r.err);
  const rows = readFileSync(out, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    rows.map((q) => [q.question, q.origin.line]),
    [
      ['q?', 1],
      ['caf\u00e9 \ufffd?', 3],
    ],
    'a real U+FFFD in the file is kept; line numbers count blank lines',
  );
});

test('a BOM is accepted and invalid UTF-8 is reported at file:line:col and copied byte for byte', () => {
  const file = join(dir, 'enc.jsonl');
  const bad = Buffer.concat([
    Buffer.from('{"id":"b","question":"ab'),
    Buffer.from([0xc3, 0x28]),
    Buffer.from('","response":"<think>t</think><answer>a</answer>"}'),
  ]);
  writeFileSync(
    file,
    Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(good('a') + '\n'), bad, Buffer.from('\n')]),
  );
  const v = coa('validate', file);
  assert.equal(v.code, 1);
  assert.equal(v.out, `${file}:2:25: error COA105 invalid UTF-8: byte 0xc3 at byte 25 of the line\n`);
  const out = join(dir, 'enc.scored.jsonl');
  const s = coa('score', file, '-o', out);
  assert.equal(s.code, 0, s.err);
  const written = readFileSync(out);
  assert.equal(JSON.parse(written.toString('utf8').split('\n')[0]).id, 'a', 'record 1 scored despite the BOM');
  assert.ok(written.includes(bad), 'the invalid line is copied with its original bytes');
});

test('env serve: a token on the command line, a token with a space and a corpus without one valid passage are refused in one line', () => {
  const corpus = join(dir, 'corpus.jsonl');
  writeFileSync(corpus, JSON.stringify({ id: 'p1', contents: '"T"\ntext' }) + '\n');
  const flag = coa('env', 'serve', '--corpus', corpus, '--token', 'abc');
  assert.equal(flag.code, 2);
  assert.equal(
    flag.err,
    'coa: --token would show the token to every local user (ps); set COA_ENV_TOKEN in the environment instead\n',
  );
  assert.equal(flag.out, '', 'never listened');
  const tok = coaWith({ COA_ENV_TOKEN: 'a b' }, 'env', 'serve', '--corpus', corpus);
  assert.equal(tok.code, 2);
  assert.match(tok.err, /^coa: COA_ENV_TOKEN must be printable ASCII without spaces/);
  assert.doesNotMatch(tok.err, NO_STACK);
  const empty = join(dir, 'empty-corpus.jsonl');
  writeFileSync(empty, '{"id": "p1"}\nnot json\n\n');
  const e = coa('env', 'serve', '--corpus', empty, '--index', join(dir, 'idx-empty'));
  assert.equal(e.code, 2, e.err);
  assert.match(e.err, /coa: .*empty-corpus\.jsonl: no valid passages/);
  assert.doesNotMatch(e.err, NO_STACK);
  assert.equal(e.out, '', 'never printed a listening line');
});

test('env serve --parent-pid: the server stops when its parent is SIGKILLed', async () => {
  const corpus = join(dir, 'corpus2.jsonl');
  writeFileSync(corpus, JSON.stringify({ id: 'p1', contents: '"T"\ntext' }) + '\n');
  mkdirSync(join(dir, 'pp'), { recursive: true });
  // The parent: a node process that starts the server with its own pid, prints the server's pid, then waits.
  const parentSrc = `const { spawn } = require('node:child_process');
const s = spawn(process.execPath, [${JSON.stringify(bin)}, 'env', 'serve', '--corpus', ${JSON.stringify(corpus)}, '--index', ${JSON.stringify(join(dir, 'pp'))}, '--parent-pid', String(process.pid)], { stdio: ['ignore', 'pipe', 'ignore'] });
s.stdout.once('data', () => console.log(s.pid));
s.once('exit', () => console.log(-1));
setInterval(() => {}, 1000);`;
  const parent = spawn(process.execPath, ['-e', parentSrc], { stdio: ['ignore', 'pipe', 'inherit'] });
  const serverPid = await new Promise<number>((resolve, reject) => {
    parent.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
    parent.once('exit', () => reject(new Error('parent exited early')));
  });
  assert.ok(serverPid > 0 && isAlive(serverPid), 'the server started');
  parent.kill('SIGKILL');
  const deadline = Date.now() + 20_000;
  while (isAlive(serverPid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  assert.ok(!isAlive(serverPid), 'the server outlived its parent');
});

// Output that cannot be written. A reader that stops reading (`| head`) ends the command quietly with SIGPIPE's status
// (141); any other write error is one line and exit 2; a path the system refuses (a loop of links) is one line naming
// it. Before: an unhandled EPIPE stack trace, exit 0 with the output lost, "internal error: ELOOP" and a stack.
const EXAMPLE = join(root, 'examples/trajectories.coa.jsonl');

test('a reader that closes the pipe early (| head -c10) ends the command quietly: exit 141, nothing on stderr', async () => {
  const big = join(dir, 'big.jsonl');
  writeFileSync(big, readFileSync(EXAMPLE, 'utf8').repeat(400));
  for (const args of [
    ['validate', big, big, big, '--strict'],
    ['score', big, '--scheme', 'f1'],
  ]) {
    const child = spawn(process.execPath, [bin, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d));
    const head = await new Promise<Buffer>((resolve) => child.stdout!.once('data', resolve));
    child.stdout!.destroy(); // as `head -c10` exits after its 10 bytes
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    assert.ok(head.length > 0);
    assert.equal(err, '', `${args[0]}: ${err}`);
    assert.equal(code, 141, `${args[0]} exited ${code}`);
  }
});

test('output onto a full disk (> /dev/full, -o /dev/full, --out, --report): one line, exit 2, for every command that writes', {
  skip: !existsSync('/dev/full') && 'no /dev/full here',
}, () => {
  const cfg = join(dir, 'plain.run.json');
  writeFileSync(cfg, '{"seed": 1}\n');
  const full = () => openSync('/dev/full', 'w');
  const toStdout: string[][] = [
    ['stats', EXAMPLE],
    ['stats', EXAMPLE, '--json'],
    ['validate', EXAMPLE],
    ['score', EXAMPLE],
    ['data', 'check', cfg],
    ['data', 'check', cfg, '--json'],
    ['diff', EXAMPLE, EXAMPLE],
    ['--help'],
  ];
  for (const args of toStdout) {
    const r = spawnSync(process.execPath, [bin, ...args], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', full(), 'pipe'],
    });
    assert.equal(r.status, 2, `${args.join(' ')} > /dev/full exited ${r.status}: ${r.stderr}`);
    assert.equal(r.stderr, 'coa: cannot write standard output: no space left on device\n', args.join(' '));
  }
  for (const args of [
    ['score', EXAMPLE, '-o', '/dev/full'],
    ['convert', '--from', 'openai', join(root, 'examples/openai-chats.jsonl'), '-o', '/dev/full'],
    ['data', 'prepare', 'sft', EXAMPLE, '--out', '/dev/full'],
    ['data', 'prepare', 'sft', EXAMPLE, '--out', join(dir, 'sft.jsonl'), '--report', '/dev/full'],
  ]) {
    const r = coa(...args);
    assert.equal(r.code, 2, `${args.join(' ')} exited ${r.code}: ${r.err}`);
    assert.match(
      r.err.split('\n').filter(Boolean).at(-1)!,
      /^coa: .*\/dev\/full: no space left on device$/,
      args.join(' '),
    );
    assert.doesNotMatch(r.err, NO_STACK);
  }
});

test('a loop of symbolic links as input or output: one line naming the path, exit 2, never "internal error: ELOOP"', () => {
  const a = join(dir, 'loop1');
  const b = join(dir, 'loop2');
  symlinkSync(b, a);
  symlinkSync(a, b);
  const cases = [
    ['score', EXAMPLE, '-o', a],
    ['convert', '--from', 'openai', join(root, 'examples/openai-chats.jsonl'), '-o', a],
    ['data', 'prepare', 'sft', EXAMPLE, '--out', a],
    ['data', 'prepare', 'sft', EXAMPLE, '--out', join(dir, 'sft2.jsonl'), '--report', a],
    ['validate', a],
    ['stats', a],
    ['score', a],
    ['diff', a, EXAMPLE],
    ['data', 'check', a],
    ['convert', '--from', 'openai', a, '-o', join(dir, 'c.jsonl')],
  ];
  for (const args of cases) {
    const r = coa(...args);
    assert.equal(r.code, 2, `${args.join(' ')} exited ${r.code}: ${r.err}`);
    assert.doesNotMatch(r.err, NO_STACK, args.join(' '));
    const lines = r.err.split('\n').filter((l) => l && !l.startsWith('{'));
    assert.match(lines.at(-1)!, /loop1.*a loop of symbolic links/, args.join(' '));
  }
});
