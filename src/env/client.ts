// TypeScript client for the environment server (used by the editor). Every failure is an EnvError
// carrying the server's error code, HTTP status and offending path; nothing fails silently.
import type {
  ErrorBody, GradeRequest, GradeResponse, HealthResponse, SearchRequest, SearchResponse, ToolSpec,
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
  constructor(private readonly opts: EnvClientOptions) {
    this.base = opts.url.replace(/\/+$/, '');
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
    const timeoutMs = this.opts.timeoutMs ?? 30_000;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    let res: Response;
    let text: string;
    try {
      res = await fetch(this.base + path, {
        method,
        headers: { authorization: `Bearer ${this.opts.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: controller.signal,
      });
      text = await res.text();
    } catch (e) {
      if (controller.signal.aborted) throw new EnvError('client_timeout', `${method} ${path}: no answer within ${timeoutMs} ms`, 0);
      throw new EnvError('network', `${method} ${path}: ${(e as Error).message}`, 0);
    } finally {
      clearTimeout(timer);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new EnvError('bad_response', `${method} ${path}: HTTP ${res.status} with a non-JSON body: ${text.slice(0, 200)}`, res.status);
    }
    if (!res.ok) {
      const err = (json as Partial<ErrorBody>)?.error;
      throw new EnvError(err?.code ?? 'http_error', err?.message ?? `HTTP ${res.status}`, res.status, err?.path);
    }
    return json as T;
  }
}
