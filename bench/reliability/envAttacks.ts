// The environment server under the body and signal attacks: /v1/health while 12 clients send 30 MB bodies at once
// (with the token and without it), resident memory after PUTs of 22.5 MB that time out, and what SIGHUP does to
// requests in flight. Runs against any build (the server is the built CLI of `root`), so the same code gives the
// before and after figures.
import { request } from 'node:http';
import { join } from 'node:path';
import {
  call,
  hugeBody,
  pct,
  rss,
  startServer,
  stateBody,
  stopServer,
  underAttack,
  type AttackFigure,
  type Server,
} from './envLoad';

/**
 * One request with the token (or `token`, say a wrong one); the answer counted, not kept. Settles when the answer has
 * come and the upload is over — sent whole, or cut by a server that answered without reading it (the rest of the
 * upload then fails with EPIPE or ECONNRESET, which is the point) — so an attack lasts as long as its bodies do.
 */
function send(
  s: Server,
  method: string,
  path: string,
  body: Buffer | undefined,
  token: string,
): Promise<{ status: number; ms: number; bytes: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    let status = 0;
    let bytes = 0;
    let answered = false;
    let closed = false;
    const done = () => answered && closed && resolve({ status, ms: performance.now() - t0, bytes });
    const req = request(
      `${s.url}${path}`,
      { method, agent: false, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } },
      (res) => {
        status = res.statusCode ?? 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        const end = () => ((answered = true), done());
        res.on('end', end);
        res.on('error', end);
        res.on('close', end);
      },
    );
    req.on('error', () => ((answered = true), done()));
    req.on('close', () => ((closed = true), done()));
    req.end(body);
  });
}

const statuses = (rs: { status: number }[]) => {
  const by = new Map<number, number>();
  for (const r of rs) by.set(r.status, (by.get(r.status) ?? 0) + 1);
  return [...by].map(([c, n]) => `${n}× ${c || 'closed'}`).join(', ');
};

export interface BodyFigures {
  baseline: AttackFigure;
  authed: AttackFigure;
  unauthed: AttackFigure;
}

/** /v1/health p50/p99/max with nothing else running, then under 12 concurrent 30 MB bodies with and without the token. */
export async function bodyFigures(root: string, clients = 12, mb = 30, extra: string[] = []): Promise<BodyFigures> {
  const s = await startServer(extra, {}, root);
  try {
    const body = hugeBody('{"queries":', '}', mb);
    const baseline = await underAttack(s, 'baseline (no load, 3 s)', async () => {
      await new Promise((r) => setTimeout(r, 3000));
      return 'idle';
    });
    const authed = await underAttack(s, `${clients} concurrent ${mb} MB bodies with the token (/retrieve)`, async () =>
      statuses(await Promise.all(Array.from({ length: clients }, () => send(s, 'POST', '/retrieve', body, s.token)))),
    );
    // Answered 401 within a few hundred ms, one volley gives a handful of polls: volleys follow each other for 3 s,
    // so the p99 is of as many polls as the baseline's.
    const unauthed = await underAttack(
      s,
      `${clients} concurrent ${mb} MB bodies without it (/retrieve), volley after volley for 3 s`,
      async () => {
        const all: { status: number }[] = [];
        const t0 = performance.now();
        let volleys = 0;
        do {
          all.push(
            ...(await Promise.all(
              Array.from({ length: clients }, () => send(s, 'POST', '/retrieve', body, 'not-the-token')),
            )),
          );
          volleys++;
        } while (performance.now() - t0 < 3000);
        return `${volleys} volleys: ${statuses(all)}`;
      },
    );
    return { baseline, authed, unauthed };
  } finally {
    await stopServer(s);
  }
}

export interface PutMemory {
  /** Resident memory as started, and once it has answered a search (its worker threads up): the baseline. */
  cold: number;
  start: number;
  afterPuts: number;
  after60s: number;
  peak: number;
  answers: string;
  otcRuns: number;
}

/**
 * Resident memory after `n` PUTs of a ~22.5 MB OTC state that each time out (--timeout-ms 300), right after and 60 s
 * later, against the server's own baseline once it has answered a search (its worker threads started, as in use).
 */
export async function timedOutPuts(root: string, n = 8, waitS = 60): Promise<PutMemory> {
  const s = await startServer(['--timeout-ms', '300'], {}, root);
  try {
    const cold = rss(s.pid).rss;
    await send(
      s,
      'POST',
      '/v1/tools/search',
      Buffer.from(JSON.stringify({ queries: ['river mountain'], top_k: 1 })),
      s.token,
    );
    await new Promise((r) => setTimeout(r, 1000));
    const start = rss(s.pid).rss;
    const body = stateBody(1_060_000); // 22.5 MB
    const rs = [];
    for (let i = 0; i < n; i++) rs.push(await call(s, 'PUT', `/v1/runs/put-${i}/otc-state`, body));
    await new Promise((r) => setTimeout(r, 2000)); // the state thread finishes what it was parsing
    const afterPuts = rss(s.pid).rss;
    await new Promise((r) => setTimeout(r, waitS * 1000));
    const m = rss(s.pid);
    const health = (await (
      await fetch(`${s.url}/v1/health`, { headers: { authorization: `Bearer ${s.token}` } })
    ).json()) as { stats: { otc_runs: number } };
    const fig = {
      cold,
      start,
      afterPuts,
      after60s: m.rss,
      peak: m.hwm,
      answers: statuses(rs),
      otcRuns: health.stats.otc_runs,
    };
    console.log(
      `${n} timed-out PUTs of ${(body.length / 1e6).toFixed(1)} MB: RSS ${cold.toFixed(0)} cold, ${start.toFixed(0)} after a search → ${afterPuts.toFixed(0)} MB, ${m.rss.toFixed(0)} MB ${waitS} s later (peak ${m.hwm.toFixed(0)}); ${fig.answers}; ${fig.otcRuns} states kept`,
    );
    return fig;
  } finally {
    await stopServer(s);
  }
}

export interface SignalStop {
  signal: NodeJS.Signals;
  inFlight: number;
  answered: number;
  dropped: number;
  stoppedEvent: boolean;
  exitMs: number;
  exit: string;
}

/** `n` searches in flight (each held ~1 s by --latency-ms), then `signal`: how many are answered, the `stopped` event, the exit. */
export async function stopUnderSignal(root: string, signal: NodeJS.Signals, n = 20): Promise<SignalStop> {
  const s = await startServer(['--latency-ms', '1000'], {}, root);
  let err = '';
  s.proc.stderr!.on('data', (d: Buffer) => (err += d));
  const exited = new Promise<string>((r) =>
    s.proc.once('exit', (code, sig) => r(sig ? `killed by ${sig}` : `exit ${code}`)),
  );
  const body = Buffer.from(JSON.stringify({ queries: ['river mountain'], top_k: 1 }));
  await send(s, 'POST', '/v1/tools/search', body, s.token); // the worker threads are up
  const pending = Array.from({ length: n }, () => send(s, 'POST', '/v1/tools/search', body, s.token));
  // All of them received (the health polls count too) and waiting out their latency.
  for (let polls = 1; ; polls++) {
    const h = (await (
      await fetch(`${s.url}/v1/health`, { headers: { authorization: `Bearer ${s.token}` } })
    ).json()) as { stats: { requests: number } };
    if (h.stats.requests - polls >= n + 1) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const t0 = performance.now();
  s.proc.kill(signal);
  const exit = await exited;
  const exitMs = performance.now() - t0;
  const rs = await Promise.all(pending);
  const answered = rs.filter((r) => r.status === 200).length;
  const fig = {
    signal,
    inFlight: n,
    answered,
    dropped: n - answered,
    stoppedEvent: /"event":"stopped"/.test(err),
    exitMs,
    exit,
  };
  console.log(
    `${signal} with ${n} searches in flight: ${answered} answered, ${fig.dropped} dropped, stopped event ${fig.stoppedEvent ? 'yes' : 'no'}, ${exit} after ${exitMs.toFixed(0)} ms`,
  );
  return fig;
}

export { pct, join };
