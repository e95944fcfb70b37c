// The environment server under hostile load, as a separate process started from the built CLI (what
// trainers and the editor run): /v1/health latency while large bodies, a 1.2M-question state and maximal searches
// are sent; when the per-request timeout answers; resident memory after many caller names and OTC runs; how long
// the server outlives a SIGKILLed parent. Works against an older build too (the token is read from the listening
// line, never passed), so the same script gives before/after figures.
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { Worker } from 'node:worker_threads';
import { mkdirSync, readFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive } from '../../src/cli/parentWatch';

export interface Server {
  url: string;
  token: string;
  pid: number;
  proc: ChildProcess;
}

export const ROOT = join(__dirname, '../..');
const WORK = join(ROOT, 'bench/.work');

/** 20,000 passages of ~1 KB sharing common words, so a query with top_k 100 finds 100 long passages. */
export function corpus(): string {
  const file = join(WORK, 'reliability-corpus.jsonl');
  if (existsSync(file)) return file;
  mkdirSync(WORK, { recursive: true });
  const words =
    'river mountain city king queen battle music album film church school station island bridge castle harbour valley forest desert garden'.split(
      ' ',
    );
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  const lines: string[] = [];
  for (let i = 0; i < 20_000; i++) {
    const text = Array.from({ length: 170 }, () => words[Math.floor(rnd() * words.length)]).join(' ');
    lines.push(JSON.stringify({ id: `p${i}`, contents: `"Entity ${i}"\n${text}.` }));
  }
  writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

/**
 * The environment the checkout's trainer and extension start their server in: glibc's malloc settings where they set them
 * (coa_trainer/env/client.py), so an older checkout's server is measured as it ran then.
 */
function launchEnv(root: string): NodeJS.ProcessEnv {
  const client = join(root, 'src/trainer/coa_trainer/env/client.py');
  const text = existsSync(client) ? readFileSync(client, 'utf8') : '';
  return {
    ...(text.includes('MALLOC_ARENA_MAX') ? { MALLOC_ARENA_MAX: '2' } : {}),
    ...(text.includes('MALLOC_MMAP_THRESHOLD_') ? { MALLOC_MMAP_THRESHOLD_: '131072' } : {}),
  };
}

/** The built CLI of `root` (default: this checkout; the reliability bench also starts an older checkout's). */
export function startServer(extra: string[] = [], env: NodeJS.ProcessEnv = {}, root = ROOT): Promise<Server> {
  const index = join(
    WORK,
    root === ROOT ? 'reliability-idx' : `reliability-idx-${root.replace(/[^A-Za-z0-9]+/g, '_')}`,
  );
  const proc = spawn(
    process.execPath,
    [join(root, 'dist/cli.js'), 'env', 'serve', '--corpus', corpus(), '--index', index, '--workers', '2', ...extra],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...launchEnv(root), ...process.env, ...env },
    },
  );
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      const l = JSON.parse(out.slice(0, nl)) as { url: string; token: string };
      resolve({ url: l.url, token: l.token, pid: proc.pid!, proc });
    });
    proc.once('exit', (code) => reject(new Error(`env server exited ${code}: ${err}`)));
  });
}

export async function stopServer(s: Server): Promise<void> {
  if (s.proc.exitCode !== null) return;
  const exited = new Promise((r) => s.proc.once('exit', r));
  s.proc.kill('SIGTERM');
  await exited;
}

/** One request; the answer's bytes are counted, not kept (a 244 MB answer must not cost the bench its memory). */
export function call(
  s: Server,
  method: string,
  path: string,
  body?: Buffer,
  agent: Agent | false = false,
): Promise<{ status: number; bytes: number; ms: number; head: string }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      `${s.url}${path}`,
      { method, agent, headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' } },
      (res) => {
        let bytes = 0;
        let head = '';
        res.on('data', (c: Buffer) => {
          if (head.length < 300) head += c.subarray(0, 300).toString();
          bytes += c.length;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - t0, head: head.slice(0, 300) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', (e) => resolve({ status: 0, bytes: 0, ms: performance.now() - t0, head: e.message }));
    req.end(body);
  });
}

/**
 * GET /v1/health back to back (20 ms apart) over one kept-alive connection; latencies in ms. It runs in a thread of
 * its own, so the bench's own work (sending 157 MB of bodies, reading 244 MB answers) never delays its timing.
 */
export class HealthProbe {
  private readonly worker: Worker;

  constructor(s: Server) {
    const code = `const { parentPort, workerData } = require('node:worker_threads');
const { Agent, request } = require('node:http');
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const ms = [];
let running = true;
parentPort.on('message', () => (running = false));
const one = () => new Promise((resolve) => {
  const t0 = performance.now();
  const req = request(workerData.url + '/v1/health', { agent, headers: { authorization: 'Bearer ' + workerData.token } }, (res) => {
    res.resume();
    res.on('end', () => resolve(res.statusCode === 200 ? performance.now() - t0 : null));
  });
  req.on('error', () => resolve(null));
  req.end();
});
(async () => {
  while (running) {
    const t = await one();
    if (t !== null && ms.push(t) === 1) parentPort.postMessage('first');
    await new Promise((r) => setTimeout(r, 20));
  }
  agent.destroy();
  parentPort.postMessage(ms);
})();`;
    this.worker = new Worker(code, { eval: true, workerData: { url: s.url, token: s.token } });
    this.first = new Promise((r) => this.worker.once('message', () => r()));
  }

  /** Resolves at the first answered poll (a thread starts slowly on a loaded machine: the attack waits for it). */
  readonly first: Promise<void>;

  async stop(): Promise<number[]> {
    await this.first;
    const got = new Promise<number[]>((r) => this.worker.once('message', r));
    this.worker.postMessage('stop');
    const ms = await got;
    await this.worker.terminate();
    return ms;
  }
}

export const pct = (xs: number[], p: number) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

export interface AttackFigure {
  name: string;
  health: { n: number; p50: number; p99: number; max: number };
  /** The same polls of a bare server in a process of its own meanwhile: what the machine's load alone costs. */
  control: { n: number; p50: number; p99: number; max: number };
  attackMs: number;
  outcome: string;
}

/**
 * A bare HTTP server in a process of its own that answers every request at once: polled beside the environment
 * server, its latency is what the shared machine's load alone costs, so a slow /v1/health can be told apart from one
 * the server itself held up.
 */
function controlServer(): Promise<Server> {
  const code = `const s = require('node:http').createServer((q, r) => r.end('{"ok":true}'));
s.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ url: 'http://127.0.0.1:' + s.address().port })));`;
  const proc = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    proc.stdout!.once('data', (d: Buffer) =>
      resolve({ url: (JSON.parse(String(d)) as { url: string }).url, token: '', pid: proc.pid!, proc }),
    );
    proc.once('exit', (code) => reject(new Error(`control server exited ${code}`)));
  });
}

const summary = (ms: number[]) => ({ n: ms.length, p50: pct(ms, 50), p99: pct(ms, 99), max: Math.max(...ms) });

/** Health latency while `attack` runs (the probes start first and stop when the attack's answers are all in). */
export async function underAttack(s: Server, name: string, attack: () => Promise<string>): Promise<AttackFigure> {
  const control = await controlServer();
  try {
    const probe = new HealthProbe(s);
    const controlProbe = new HealthProbe(control);
    await Promise.all([probe.first, controlProbe.first]);
    await new Promise((r) => setTimeout(r, 200)); // a few calm samples first
    const t0 = performance.now();
    const outcome = await attack();
    const attackMs = performance.now() - t0;
    const [ms, controlMs] = await Promise.all([probe.stop(), controlProbe.stop()]);
    const fig = { name, health: summary(ms), control: summary(controlMs), attackMs, outcome };
    console.log(
      `${name}: health p50 ${fig.health.p50.toFixed(1)} p99 ${fig.health.p99.toFixed(1)} max ${fig.health.max.toFixed(1)} ms (n ${ms.length}); a bare server meanwhile p99 ${fig.control.p99.toFixed(1)} ms; attack ${attackMs.toFixed(0)} ms; ${outcome}`,
    );
    return fig;
  } finally {
    control.proc.removeAllListeners('exit');
    control.proc.kill();
  }
}

/** About `mb` MB of JSON whose parse is real work: a long array of one-letter strings. */
export function hugeBody(prefix: string, suffix: string, mb: number): Buffer {
  const n = Math.floor((mb * 1e6 - prefix.length - suffix.length) / 4);
  return Buffer.from(`${prefix}[${Array(n).fill('"x"').join(',')}]${suffix}`);
}

/** An OTC state of `n` questions (1.2M: 25 MB, under the 32 MiB body limit). */
export function stateBody(n: number, tag = ''): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(`"${tag}question ${i}?":${i % 7}`);
  return Buffer.from(`{"version":1,"min_tool_calls":{${parts.join(',')}}}`);
}

const outcomeOf = (rs: { status: number; bytes: number; head: string }[]) => {
  const by = new Map<string, number>();
  for (const r of rs) {
    const code = r.status === 200 ? '200' : `${r.status} ${/"code":"([a-z_]+)"/.exec(r.head)?.[1] ?? ''}`.trim();
    by.set(code, (by.get(code) ?? 0) + 1);
  }
  const bytes = rs.reduce((n, r) => n + r.bytes, 0);
  return `${[...by].map(([c, n]) => `${n}× ${c}`).join(', ')}; ${(bytes / 1e6).toFixed(1)} MB answered`;
};

/** Resident and peak resident memory of a process, MB. */
export function rss(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

export async function attacks(): Promise<AttackFigure[]> {
  const s = await startServer();
  const figs: AttackFigure[] = [];
  try {
    const retrieve315 = hugeBody('{"queries":', '}', 31.5);
    const alerts315 = hugeBody('{"step":1,"values":{"tc":', '}}', 31.5);
    const state12m = stateBody(1_200_000);
    const maxSearch = Buffer.from(
      JSON.stringify({ queries: Array.from({ length: 1024 }, (_, i) => `river mountain city king ${i}`), top_k: 100 }),
    );
    figs.push(
      await underAttack(s, 'one 31.5 MB body to /retrieve', async () =>
        outcomeOf([await call(s, 'POST', '/retrieve', retrieve315)]),
      ),
    );
    figs.push(
      await underAttack(s, 'five 31.5 MB bodies to /retrieve at once', async () =>
        outcomeOf(await Promise.all(Array.from({ length: 5 }, () => call(s, 'POST', '/retrieve', retrieve315)))),
      ),
    );
    figs.push(
      await underAttack(s, 'one 31.5 MB body to /v1/alerts', async () =>
        outcomeOf([await call(s, 'POST', '/v1/alerts', alerts315)]),
      ),
    );
    figs.push(
      await underAttack(s, `a 1.2M-question PUT otc-state (${(state12m.length / 1e6).toFixed(1)} MB)`, async () =>
        outcomeOf([await call(s, 'PUT', '/v1/runs/big/otc-state', state12m)]),
      ),
    );
    figs.push(
      await underAttack(
        s,
        `four maximal searches at once (1,024 queries × top_k 100, ${(maxSearch.length / 1e3).toFixed(0)} KB each)`,
        async () =>
          outcomeOf(await Promise.all(Array.from({ length: 4 }, () => call(s, 'POST', '/v1/tools/search', maxSearch)))),
      ),
    );
  } finally {
    await stopServer(s);
  }
  return figs;
}

/** When a request that outlives --timeout-ms 500 is answered (the 1.2M-question PUT takes seconds to check). */
export async function timeoutFigure(): Promise<{ status: number; ms: number; code: string }> {
  const s = await startServer(['--timeout-ms', '500']);
  try {
    const r = await call(s, 'PUT', '/v1/runs/big/otc-state', stateBody(1_200_000));
    const out = { status: r.status, ms: r.ms, code: /"code":"([a-z_]+)"/.exec(r.head)?.[1] ?? '' };
    console.log(`--timeout-ms 500, 1.2M-question PUT: ${out.status} ${out.code} after ${out.ms.toFixed(0)} ms`);
    return out;
  } finally {
    await stopServer(s);
  }
}

export interface MemoryFigure {
  start: number;
  afterCallers: number;
  healthReplyBytes: number;
  afterRuns: number;
  peak: number;
  otc: string;
}

/** RSS after 60,000 distinct caller names (GET …/<caller>/retrieve) and 100 runs' OTC states of 120k questions. */
export async function memory(): Promise<MemoryFigure> {
  const s = await startServer();
  try {
    const base = `/t/${encodeURIComponent(s.token)}`;
    const start = rss(s.pid).rss;
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    for (let i = 0; i < 60_000; i += 500) {
      await Promise.all(
        Array.from({ length: 500 }, (_, k) => call(s, 'GET', `${base}/caller-${i + k}/retrieve`, undefined, agent)),
      );
    }
    agent.destroy();
    const afterCallers = rss(s.pid).rss;
    const health = await call(s, 'GET', '/v1/tool-health');
    for (let r = 0; r < 100; r++) {
      const res = await call(s, 'PUT', `/v1/runs/run-${r}/otc-state`, stateBody(120_000, `r${r} `));
      if (res.status !== 200) throw new Error(`PUT run-${r}: ${res.status} ${res.head}`);
    }
    const m = rss(s.pid);
    const stats = (
      await (await fetch(`${s.url}/v1/health`, { headers: { authorization: `Bearer ${s.token}` } })).json()
    ).stats as Record<string, number>;
    const otc = `${stats.otc_runs} runs kept, ${stats.otc_evictions} evicted${stats.otc_bytes !== undefined ? `, ${(stats.otc_bytes / 2 ** 20).toFixed(0)} MiB estimated` : ''}`;
    const fig = { start, afterCallers, healthReplyBytes: health.bytes, afterRuns: m.rss, peak: m.hwm, otc };
    console.log(
      `memory: start ${start.toFixed(0)} MB; after 60k callers ${afterCallers.toFixed(0)} MB (tool-health reply ${health.bytes} bytes); after 100 runs ${m.rss.toFixed(0)} MB, peak ${m.hwm.toFixed(0)} MB; ${otc}`,
    );
    return fig;
  } finally {
    await stopServer(s);
  }
}

/** How long the server lives after its parent is SIGKILLed (the parent starts it with --parent-pid), ms. */
export async function parentExit(times = 5): Promise<number[]> {
  const out: number[] = [];
  const cli = join(ROOT, 'dist/cli.js');
  for (let i = 0; i < times; i++) {
    const parentSrc = `const { spawn } = require('node:child_process');
const s = spawn(process.execPath, [${JSON.stringify(cli)}, 'env', 'serve', '--corpus', ${JSON.stringify(corpus())}, '--index', ${JSON.stringify(join(WORK, 'reliability-idx'))}, '--workers', '1', '--parent-pid', String(process.pid)], { stdio: ['ignore', 'pipe', 'ignore'] });
s.stdout.once('data', () => console.log(s.pid));
setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['-e', parentSrc], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pid = await new Promise<number>((resolve) =>
      parent.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim()))),
    );
    const t0 = performance.now();
    parent.kill('SIGKILL');
    while (isAlive(pid)) await new Promise((r) => setTimeout(r, 10));
    out.push(performance.now() - t0);
  }
  console.log(`outlives a SIGKILLed parent by: ${out.map((x) => x.toFixed(0)).join(', ')} ms`);
  return out;
}
