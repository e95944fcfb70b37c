// TypeScript client for the environment server (used by the editor). Every failure is an EnvError
// carrying the server's error code, HTTP status and offending path; nothing fails silently.
// Connections are kept alive (one http.Agent per client): a search costs a request, not a TCP handshake.
import { Agent, request } from 'node:http';
import type {
  ErrorBody,
  GradeRequest,
  GradeResponse,
  HealthResponse,
  SearchRequest,
  SearchResponse,
  ToolSpec,
} from './protocol';

export interface EnvClientOptions {
  url: string;
  token: string;
  /** Client-side limit per attempt (default 30 s); past it the call fails with code `client_timeout`. */
  timeoutMs?: number;
  /** Extra attempts after a 503/504 or a network error (default 0), with exponential backoff from 50 ms. */
  retries?: number;
}

export class EnvError extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** HTTP status, or 0 when no response came (network error, client timeout). */
    readonly status: number,
    readonly path?: string,
  ) {
    super(message);
    this.name = 'EnvError';
  }
}

export class EnvClient {
  private readonly base: string;
  private readonly agent = new Agent({ keepAlive: true });
  constructor(private readonly opts: EnvClientOptions) {
    this.base = opts.url.replace(/\/+$/, '');
  }

  /** Close the kept-alive connections (the client stays usable: a later call opens a new one). */
  close(): void {
    this.agent.destroy();
  }

  health(): Promise<HealthResponse> {
    return this.call('GET', '/v1/health');
  }

  async tools(): Promise<ToolSpec[]> {
    return (await this.call<{ tools: ToolSpec[] }>('GET', '/v1/tools')).tools;
  }

  search(req: SearchRequest): Promise<SearchResponse> {
    return this.call('POST', '/v1/tools/search', req);
  }

  grade(req: GradeRequest): Promise<GradeResponse> {
    return this.call('POST', '/v1/grade', req);
  }

  exportOtcState(run: string): Promise<unknown> {
    return this.call('GET', `/v1/runs/${encodeURIComponent(run)}/otc-state`);
  }

  async importOtcState(run: string, state: unknown): Promise<{ run: string; questions: number }> {
    return this.call('PUT', `/v1/runs/${encodeURIComponent(run)}/otc-state`, state);
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const retries = this.opts.retries ?? 0;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once<T>(method, path, body);
      } catch (e) {
        const err = e as EnvError;
        const transient = err.status === 503 || err.status === 504 || err.status === 0;
        if (!transient || attempt >= retries) throw err;
        await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
      }
    }
  }

  private async once<T>(method: string, path: string, body?: unknown): Promise<T> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
    let res: { status: number; text: string };
    try {
      res = await this.exchange(method, path, payload);
    } catch (e) {
      const err = e as NodeJS.ErrnoException & { reused?: boolean };
      // A kept-alive connection the server closed meanwhile fails before any answer: reconnect once.
      if (!(err.reused && err.code === 'ECONNRESET')) throw e;
      res = await this.exchange(method, path, payload);
    }
    let json: unknown;
    try {
      json = JSON.parse(res.text);
    } catch {
      throw new EnvError(
        'bad_response',
        `${method} ${path}: HTTP ${res.status} with a non-JSON body: ${res.text.slice(0, 200)}`,
        res.status,
      );
    }
    if (res.status < 200 || res.status >= 300) {
      const err = (json as Partial<ErrorBody>)?.error;
      throw new EnvError(err?.code ?? 'http_error', err?.message ?? `HTTP ${res.status}`, res.status, err?.path);
    }
    return json as T;
  }

  /** One request on a kept-alive connection; network failures and the client timeout become EnvErrors. */
  private exchange(method: string, path: string, payload?: Buffer): Promise<{ status: number; text: string }> {
    const timeoutMs = this.opts.timeoutMs ?? 30_000;
    return new Promise((resolve, reject) => {
      if (!this.base.startsWith('http://')) {
        reject(
          new EnvError(
            'bad_url',
            `environment server url must start with http:// (it listens on loopback), got ${JSON.stringify(this.opts.url)}`,
            0,
          ),
        );
        return;
      }
      let timedOut = false;
      const headers: Record<string, string | number> = { authorization: `Bearer ${this.opts.token}` };
      if (payload) Object.assign(headers, { 'content-type': 'application/json', 'content-length': payload.length });
      const req = request(this.base + path, { method, agent: this.agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', (e) => fail(e));
      });
      const fail = (e: Error) => {
        clearTimeout(timer);
        if (timedOut) reject(new EnvError('client_timeout', `${method} ${path}: no answer within ${timeoutMs} ms`, 0));
        else if (req.reusedSocket && (e as NodeJS.ErrnoException).code === 'ECONNRESET')
          reject(Object.assign(e, { reused: true }));
        else reject(new EnvError('network', `${method} ${path}: ${e.message}`, 0));
      };
      const timer = setTimeout(() => {
        timedOut = true;
        req.destroy(new Error('client timeout'));
      }, timeoutMs);
      req.on('error', fail);
      req.end(payload);
    });
  }
}
