// `coa env serve` as a child process: progress JSON on stderr, exactly one `listening` line on stdout,
// a working token, clean exit on SIGTERM; and one-line errors for bad flags.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { tempDir, writeKnownCorpus } from './helpers';

const ENTRY = join(__dirname, 'cli-entry.ts');
const node = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  spawn(process.execPath, ['--import', 'tsx', ENTRY, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });

function lines(stream: NodeJS.ReadableStream, onLine: (l: string) => void): void {
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (d: string) => {
    buf += d;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      onLine(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
  });
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`env serve: progress, one listening line, serves, stops on ${signal}`, { timeout: 60_000 }, async (t) => {
    const dir = tempDir(t);
    const { file, facts } = writeKnownCorpus(dir, 5000);
    // The token comes from the environment (never a flag: command lines are public to local users).
    const child = node(
      ['serve', '--corpus', file, '--index', join(dir, 'idx'), '--port', '0', '--dialect', 'search-r1'],
      { COA_ENV_TOKEN: 'tok-123' },
    );
    t.after(() => child.exitCode === null && child.kill('SIGKILL'));
    const stdout: string[] = [];
    const stderr: string[] = [];
    lines(child.stderr, (l) => stderr.push(l));
    const listening = await new Promise<{ url: string; token: string }>((resolve, reject) => {
      lines(child.stdout, (l) => {
        stdout.push(l);
        resolve(JSON.parse(l));
      });
      child.on('exit', (code) => reject(new Error(`exited ${code}: ${stderr.join('\n')}`)));
    });
    assert.equal(listening.token, 'tok-123');
    assert.match(listening.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const res = await fetch(`${listening.url}/v1/tools/search`, {
      method: 'POST',
      headers: { authorization: 'Bearer tok-123', 'content-type': 'application/json' },
      body: JSON.stringify({ queries: [facts[4321].word] }),
    });
    const body = (await res.json()) as any;
    assert.equal(body.results[0][0].id, facts[4321].id);
    assert.ok(body.observations[0].startsWith(`Doc 1(Title: "${facts[4321].title}") `));

    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill(signal);
    assert.equal(await exit, 0);
    assert.equal(stdout.length, 1, 'exactly one stdout line');
    const events = stderr.map((l) => JSON.parse(l));
    const progress = events.filter((e) => e.event === 'index_progress');
    assert.ok(progress.length >= 2, 'progress is reported while building');
    assert.deepEqual(progress.at(-1), { event: 'index_progress', done: 5000, total: 5000 });
    progress.forEach((p, i) => i > 0 && assert.ok(p.done >= progress[i - 1].done));
    assert.equal(events.find((e) => e.event === 'index_ready')?.source, 'built');
    assert.deepEqual(events.at(-1), { event: 'stopped', signal });
  });
}

test('env serve / index: bad flags and missing corpus are one-line errors', () => {
  const run = (args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', ENTRY, ...args], { encoding: 'utf8' });
  const cases: [string[], RegExp][] = [
    [['serve'], /--corpus <corpus.jsonl> is required/],
    [['serve', '--corpus', '/nonexistent/c.jsonl'], /\/nonexistent\/c\.jsonl: ENOENT/],
    [['serve', '--corpus', 'x', '--dialect', 'react'], /--dialect must be one of coa, search-r1, autocoa, hermes/],
    [['serve', '--corpus', 'x', '--fault-rate', '2'], /--fault-rate must be a probability/],
    [['serve', '--corpus', 'x', '--workers', '0'], /--workers must be an integer 1-256/],
    [['serve', '--corpus', 'x', '--port', 'abc'], /expects a number/],
    [['serve', '--corpus', 'x', '--bogus'], /unknown option --bogus/],
    [['frobnicate'], /unknown subcommand "env frobnicate"/],
  ];
  for (const [args, want] of cases) {
    const r = run(args);
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr, want);
    assert.doesNotMatch(r.stderr, /internal error/);
  }
});

test('env index builds once, then reports the saved index as loaded', (t) => {
  const dir = tempDir(t);
  const { file } = writeKnownCorpus(dir, 100);
  const run = () =>
    spawnSync(process.execPath, ['--import', 'tsx', ENTRY, 'index', '--corpus', file, '--index', join(dir, 'idx')], {
      encoding: 'utf8',
    });
  const ready = (stderr: string) =>
    stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((e) => e.event === 'index_ready');
  const first = run();
  assert.equal(first.status, 0, first.stderr);
  assert.equal(ready(first.stderr).source, 'built');
  const second = run();
  assert.equal(ready(second.stderr).source, 'loaded');
  assert.equal(ready(second.stderr).passages, 100);
});
