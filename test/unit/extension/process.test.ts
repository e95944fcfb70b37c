// The process manager with real child processes: argument arrays reach the child verbatim (no shell), stdout JSON
// lines become events, cancel sends SIGTERM (the child sees it) then SIGKILL, and every way of failing ends in
// an actionable message. The environment server is started and stopped for real (dist/cli.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManagedProcess, type LogSink } from '../../../src/extension/process/manager';
import { diagnoseExit } from '../../../src/extension/process/diagnose';
import { startEnvServer, EnvServerError } from '../../../src/extension/process/envServer';

const root = join(__dirname, '../../..');
const node = process.execPath;

function memoryLog(): LogSink & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
  };
}

test('arguments reach the child verbatim (no shell) and stdout JSON lines become events', async () => {
  const log = memoryLog();
  const seen: Record<string, unknown>[] = [];
  const tricky = ['a b', '$(echo pwned)', '; rm -rf /', '"quoted"', "it's", '*'];
  const p = new ManagedProcess({
    what: 'child',
    command: node,
    args: [
      '-e',
      'console.log(JSON.stringify({argv: process.argv.slice(1)})); console.log("plain text"); console.error("to stderr")',
      ...tricky,
    ],
    log,
    onJson: (v) => seen.push(v),
  });
  const r = await p.done;
  assert.equal(r.status, 'ok');
  assert.deepEqual(seen, [{ argv: tricky }]);
  assert.ok(
    log.lines.some((l) => l === 'info [child] plain text'),
    log.lines.join('\n'),
  );
  assert.ok(
    log.lines.some((l) => l === 'warn [child] to stderr'),
    log.lines.join('\n'),
  );
});

const sigtermChild = `
process.on('SIGTERM', () => { console.log(JSON.stringify({ got: 'SIGTERM' })); process.exit(130); });
console.log(JSON.stringify({ ready: true }));
setInterval(() => {}, 1000);`;

test('cancel sends SIGTERM, the child sees it and exits 130: cancelled', async () => {
  const events: Record<string, unknown>[] = [];
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const p = new ManagedProcess({
    what: 'trainer',
    command: node,
    args: ['-e', sigtermChild],
    log: memoryLog(),
    graceMs: 20_000,
    onJson: (v) => {
      events.push(v);
      if (v.ready) ready();
    },
  });
  await isReady;
  assert.equal(p.cancelling, false);
  const ending = p.cancel();
  assert.equal(p.cancelling, true);
  const r = await ending;
  assert.deepEqual(events, [{ ready: true }, { got: 'SIGTERM' }]);
  assert.equal(r.code, 130);
  assert.equal(r.status, 'cancelled');
  assert.equal(r.message, '');
});

test('a child that ignores SIGTERM is killed after the grace period', async () => {
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const log = memoryLog();
  const p = new ManagedProcess({
    what: 'trainer',
    command: node,
    args: [
      '-e',
      `process.on('SIGTERM', () => console.log('{"ignored":true}')); console.log('{"ready":true}'); setInterval(() => {}, 1000);`,
    ],
    log,
    graceMs: 300,
    onJson: (v) => v.ready && ready(),
  });
  await isReady;
  const r = await p.cancel();
  assert.equal(r.signal, 'SIGKILL');
  assert.equal(r.status, 'cancelled');
  assert.ok(log.lines.some((l) => l.includes('SIGKILL')));
});

test('a crash (non-zero exit) gives a message with the fix and the last stderr lines', async () => {
  const p = new ManagedProcess({
    what: 'trainer',
    command: node,
    args: [
      '-e',
      'for (let i = 0; i < 20; i++) console.error("line " + i); console.error("ValueError: boom"); process.exit(3)',
    ],
    log: memoryLog(),
  });
  const r = await p.done;
  assert.equal(r.status, 'failed');
  assert.equal(r.kind, 'crash');
  assert.equal(r.code, 3);
  assert.match(r.message, /exited with code 3/);
  assert.match(r.message, /Resume Run/);
  assert.match(r.message, /ValueError: boom$/);
  assert.ok(!r.message.includes('line 5\n'), 'only the tail is quoted');
});

test('a child killed by a signal it did not get from us is a failure, not a cancel', async () => {
  const p = new ManagedProcess({
    what: 'trainer',
    command: node,
    args: ['-e', 'process.kill(process.pid, "SIGKILL")'],
    log: memoryLog(),
  });
  const r = await p.done;
  assert.equal(r.status, 'failed');
  assert.equal(r.kind, 'killed');
  assert.match(r.message, /SIGKILL/);
});

test('a missing interpreter says how to set coaStudio.python', async () => {
  const p = new ManagedProcess({
    what: 'trainer',
    command: '/nonexistent/bin/python3',
    args: ['-m', 'coa_trainer'],
    log: memoryLog(),
  });
  const r = await p.done;
  assert.equal(r.status, 'failed');
  assert.equal(r.kind, 'python-missing');
  assert.match(r.message, /\/nonexistent\/bin\/python3" was not found/);
  assert.match(r.message, /coaStudio\.python/);
});

test('python without torch: the message names the package and the fix', async () => {
  const python = ['/usr/bin/python3', join(root, '.venv/bin/python')].find(existsSync);
  assert.ok(python, 'neither /usr/bin/python3 nor .venv/bin/python exists: run npm install');
  // -S: no site-packages, so the import fails exactly as in an interpreter without the requirements.
  const p = new ManagedProcess({
    what: 'trainer',
    command: python,
    args: ['-S', '-c', 'import torch'],
    log: memoryLog(),
  });
  const r = await p.done;
  assert.equal(r.kind, 'torch-missing');
  assert.match(r.message, /needs the Python package "torch"/);
  assert.match(r.message, /requirements\.txt/);
});

test('diagnoseExit: trainer module missing, port in use, cancelled vs failed', () => {
  const base = { what: 'trainer', command: 'py', code: 1, signal: null, cancelled: false };
  assert.equal(
    diagnoseExit({ ...base, stderrTail: ["ModuleNotFoundError: No module named 'coa_trainer'"] }).kind,
    'trainer-missing',
  );
  assert.equal(
    diagnoseExit({ ...base, stderrTail: ['Error: listen EADDRINUSE: address already in use 127.0.0.1:80'] }).kind,
    'port-in-use',
  );
  assert.equal(diagnoseExit({ ...base, code: 130, cancelled: true, stderrTail: [] }).status, 'cancelled');
  assert.equal(diagnoseExit({ ...base, code: 130, cancelled: false, stderrTail: [] }).status, 'failed');
  assert.equal(diagnoseExit({ ...base, code: 0, stderrTail: [] }).status, 'ok');
});

const cli = join(root, 'dist/cli.js');

function tinyCorpus(): string {
  const dir = mkdtempSync(join(tmpdir(), 'coa-env-'));
  const corpus = join(dir, 'corpus.jsonl');
  writeFileSync(
    corpus,
    ['Paris', 'Berlin', 'Rome']
      .map((c, i) => JSON.stringify({ id: String(i), contents: `"${c}"\n${c} is a capital.` }))
      .join('\n') + '\n',
  );
  return corpus;
}

test('env server: starts on 127.0.0.1 with a per-run token, is healthy, stops with SIGTERM', async () => {
  assert.ok(existsSync(cli), `${cli} is not built: run npm run build`);
  const corpus = tinyCorpus();
  const log = memoryLog();
  let env: Awaited<ReturnType<typeof startEnvServer>> | undefined;
  try {
    env = await startEnvServer({ node, cli, corpus, log });
    assert.match(env.url, /^http:\/\/127\.0\.0\.1:\d+/);
    assert.ok(env.token.length >= 32);
    const ok = await fetch(new URL('/v1/health', env.url), { headers: { authorization: `Bearer ${env.token}` } });
    assert.equal(ok.status, 200);
    const denied = await fetch(new URL('/v1/health', env.url));
    assert.equal(denied.status, 401);
    const token = env.token;
    assert.ok(!log.lines.some((l) => l.includes(token)), 'the token is not logged');
    // Nor on the server's command line, which every local user reads with ps: it is in its environment.
    const cmdline = readFileSync(`/proc/${env.process.pid}/cmdline`, 'utf8');
    assert.ok(cmdline.includes('env\0serve'), cmdline);
    assert.ok(!cmdline.includes(token), `the token is on the command line: ${cmdline.split('\0').join(' ')}`);
    // Few malloc arenas, so memory a replaced worker thread freed goes back to the system.
    const environ = readFileSync(`/proc/${env.process.pid}/environ`, 'utf8').split('\0');
    assert.ok(environ.includes(`MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX ?? '2'}`), 'MALLOC_ARENA_MAX');
    assert.ok(
      environ.includes(`MALLOC_MMAP_THRESHOLD_=${process.env.MALLOC_MMAP_THRESHOLD_ ?? '131072'}`),
      'MALLOC_MMAP_THRESHOLD_',
    );
    const r = await env.stop();
    assert.equal(r.status, 'ok'); // the server handles SIGTERM by closing and exiting 0
    assert.equal(env!.process.running, false);
  } finally {
    await env?.stop(); // also when an assertion failed: a live server would keep the test process alive
    rmSync(join(corpus, '..'), { recursive: true, force: true });
  }
});

test('env server: a port in use gives the port-in-use message', async () => {
  assert.ok(existsSync(cli), `${cli} is not built: run npm run build`);
  const corpus = tinyCorpus();
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as { port: number }).port;
  try {
    await assert.rejects(startEnvServer({ node, cli, corpus, port, log: memoryLog() }), (e: Error) => {
      assert.ok(e instanceof EnvServerError);
      assert.match(e.message, /port is in use/);
      return true;
    });
  } finally {
    blocker.close();
    rmSync(join(corpus, '..'), { recursive: true, force: true });
  }
});
