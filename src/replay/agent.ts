// The replay agent loop, the editor's twin of the trainer's `rollout` (src/trainer/coa_trainer/rollout/loop.py):
// generate until an action's closing tag, the answer's closing tag or EOS; for an action either ask the
// environment's tool (RL-2 style) or let the model write the observation itself after the observation opening
// tag (RL-1, simulated). Observation tokens carry loss-mask 0. Ids flow end to end through one KV cache.
// Independent of VS Code: the NotebookController drives it, tests run it in-process.
import { parseToolCall } from '../core/scanner';
import type { TrajectoryRecord } from '../core/record';
import { CancelledError, generate, seededRandom } from './generate';
import type { OnnxModel } from './model';
import { TagIO } from './tags';
import { continueFrom } from './given';

export type ReplayMode = 'env' | 'simulated';

export interface ReplayOptions {
  mode: ReplayMode;
  /** The environment's search tool: query → observation body (without tags). Required for mode 'env'. */
  tool?: (query: string) => Promise<string>;
  /** How a question is put to the model (the run config's prompt_template). */
  promptTemplate?: string;
  /** Fork: continue this response (a record's steps up to one, maybe edited) instead of starting from the prompt. */
  prefix?: string;
  maxTurns?: number;
  maxNewTokens?: number;
  maxObservationTokens?: number;
  maxTotal?: number;
  temperature?: number;
  seed?: number;
  signal?: AbortSignal;
  /** Called as each step is complete (a model turn, an observation). */
  onStep?: (step: ReplayStep) => void | Promise<void>;
}

export type StopReason = 'action' | 'answer' | 'eos' | 'limit' | 'observation' | 'max-turns';

export interface ReplayStep {
  kind: 'model' | 'observation';
  /** Index of this step's first token in the response ids. */
  first: number;
  ids: number[];
  text: string;
  latencyMs: number;
  stop: StopReason;
  /** Observations: the model wrote it (simulated environment). */
  simulated?: boolean;
  query?: string;
  toolError?: string;
}

export interface ReplayResult {
  promptIds: number[];
  ids: number[];
  lossMask: number[];
  logprobs: (number | null)[];
  steps: ReplayStep[];
  response: string;
  offsets: number[];
  toolCalls: number;
  toolFailures: number;
  finished: boolean;
  truncated: boolean;
  /** Fork: how many of `ids` (the first ones) were given, not generated. */
  given?: number;
}

export const DEFAULT_PROMPT = 'question : {question}\n';
/** coa_trainer/data/lengths.py NO_CAP. */
export const NO_CAP = 2 ** 31 - 1;

export async function replayQuestion(model: OnnxModel, question: string, opts: ReplayOptions): Promise<ReplayResult> {
  const tok = model.tokenizer;
  const info = model.info;
  if (opts.mode === 'env' && !opts.tool) throw new Error('replay in mode env needs a tool (the environment server)');
  const io = await TagIO.make(tok, info);
  const turnStops = io.turnStops();
  const eos = info.eos_id ?? undefined;
  const maxTurns = opts.maxTurns ?? 4;
  const maxNew = opts.maxNewTokens ?? 128;
  const maxObs = opts.maxObservationTokens ?? 128;
  // The trainer's `max_len: null`: the model's context, else no cap (its rollouts are bounded by the turn limits).
  const maxTotal = opts.maxTotal ?? info.context ?? NO_CAP;
  const random = seededRandom(opts.seed ?? 0);
  const check = () => {
    if (opts.signal?.aborted) throw new CancelledError();
  };

  const promptIds = (
    await tok.encode((opts.promptTemplate ?? info.prompt_template ?? DEFAULT_PROMPT).replace('{question}', question))
  ).ids;
  const dec = model.decoder();
  const r: ReplayResult = {
    promptIds,
    ids: [],
    lossMask: [],
    logprobs: [],
    steps: [],
    response: '',
    offsets: [],
    toolCalls: 0,
    toolFailures: 0,
    finished: false,
    truncated: false,
  };
  const push = async (step: ReplayStep) => {
    r.steps.push(step);
    await opts.onStep?.(step);
  };
  // What the next generate call must feed first: the prompt, then whatever was appended but not yet fed.
  let pending: number[] = promptIds.slice();
  /** The observation for an action's query: the environment's (RL-2) or the model's own (RL-1, simulated). */
  const observe = async (query: string) => {
    r.toolCalls++;
    check();
    const t1 = performance.now();
    const obsFirst = r.ids.length;
    let obsIds: number[];
    let toolError: string | undefined;
    let simulated = false;
    if (opts.mode === 'env') {
      let body = '';
      try {
        body = await opts.tool!(query);
      } catch (e) {
        toolError = (e as Error).message;
        r.toolFailures++;
      }
      const obs = await io.observationIds(body, maxObs);
      obsIds = obs.ids;
      // As the trainer's loop: an observation cut to max_obs_tokens truncates the trajectory (it read less than the
      // tool answered).
      r.truncated ||= obs.cut;
      pending = [...pending, ...obsIds];
    } else {
      // RL-1: the policy writes the observation after the opening tag; its tokens are masked like real ones.
      simulated = true;
      const open = await io.obsOpenIds();
      const obsStops = io.obsStops();
      const w = await generate(dec, [...pending, ...open], {
        maxNewTokens: Math.max(1, Math.min(maxObs, maxTotal - promptIds.length - r.ids.length - open.length)),
        stopIds: obsStops.ids,
        stopStrings: obsStops.strings,
        temperature: opts.temperature,
        random,
        signal: opts.signal,
      });
      const ended = w.stopped && w.ids[w.ids.length - 1] !== eos;
      // EOS inside an observation is replaced by its close; a cut observation still closes.
      const close = ended ? [] : await io.obsCloseIds();
      obsIds = [...open, ...(w.stopped && !ended ? w.ids.slice(0, -1) : w.ids), ...close];
      pending = w.stopped && ended ? [w.ids[w.ids.length - 1]] : close;
    }
    r.ids.push(...obsIds);
    r.lossMask.push(...obsIds.map(() => 0));
    r.logprobs.push(...obsIds.map(() => null));
    await push({
      kind: 'observation',
      first: obsFirst,
      ids: obsIds,
      text: await tok.decode(obsIds),
      latencyMs: performance.now() - t1,
      stop: 'observation',
      simulated,
      query,
      ...(toolError ? { toolError } : {}),
    });
  };

  // A fork continues a given response (edited or not): its tokens are fed as they are, never trained (mask 0, no
  // log-prob); generation resumes where it ends — after an action, with that action's observation.
  let firstTurn = 0;
  let done = false;
  if (opts.prefix !== undefined) {
    const given = continueFrom(opts.prefix, info.dialect);
    const ids = given.text ? (await tok.encode(given.text)).ids : [];
    r.ids.push(...ids);
    r.lossMask.push(...ids.map(() => 0));
    r.logprobs.push(...ids.map(() => null));
    r.given = ids.length;
    pending.push(...ids);
    r.toolCalls = given.actions - (given.query !== null ? 1 : 0);
    firstTurn = given.actions;
    if (given.answered) {
      r.finished = true;
      done = true;
    } else if (given.query !== null) {
      // The action's own turn was turn `actions - 1`: within max_turns it gets its observation, else it ends here.
      if (given.actions - 1 >= maxTurns || promptIds.length + r.ids.length >= maxTotal) done = true;
      else await observe(given.query);
    }
  }
  for (let turn = firstTurn; !done; turn++) {
    check();
    const budget = Math.min(maxNew, maxTotal - promptIds.length - r.ids.length);
    if (budget <= 0) {
      r.truncated = true;
      break;
    }
    const t0 = performance.now();
    const g = await generate(dec, pending, {
      maxNewTokens: budget,
      stopIds: turnStops.ids,
      stopStrings: turnStops.strings,
      temperature: opts.temperature,
      random,
      signal: opts.signal,
    });
    // A stop token is returned but not yet in the cache: it is fed first next time.
    pending = g.stopped ? [g.ids[g.ids.length - 1]] : [];
    const first = r.ids.length;
    r.ids.push(...g.ids);
    r.lossMask.push(...g.ids.map(() => 1));
    r.logprobs.push(...g.logprobs);
    const action = g.stopped && (await io.endedWithAction(g.ids));
    // As the trainer's run_turns: an action gets its observation only within max_turns and while the trajectory is
    // shorter than max_len; otherwise it ends there.
    const room = promptIds.length + r.ids.length < maxTotal;
    const stop: StopReason = !g.stopped
      ? 'limit'
      : action
        ? turn >= maxTurns
          ? 'max-turns'
          : room
            ? 'action'
            : 'limit'
        : g.ids[g.ids.length - 1] === eos
          ? 'eos'
          : 'answer';
    await push({
      kind: 'model',
      first,
      ids: g.ids,
      text: await tok.decode(g.ids),
      latencyMs: performance.now() - t0,
      stop,
    });
    if (stop === 'limit') {
      // A turn cut by the token budget truncates; an action that ends exactly at max_len only goes unanswered (the
      // trainer's run_turns leaves it neither finished nor truncated: nothing was cut).
      r.truncated = !g.stopped;
      break;
    }
    if (stop !== 'action') {
      r.finished = stop !== 'max-turns';
      break;
    }
    await observe(actionQuery(await io.actionBody(g.ids, r.ids), info.tags.action_open));
    if (promptIds.length + r.ids.length >= maxTotal) {
      r.truncated = true;
      break;
    }
  }
  const decoded = await tok.decodeWithOffsets(r.ids);
  r.response = decoded.text;
  r.offsets = decoded.offsets;
  return r;
}

/** The search query of an action body: the text, or the `query` argument of a Hermes JSON call. */
function actionQuery(body: string, actionOpen: string): string {
  const text = body.trim();
  if (actionOpen === '<tool_call>') {
    const call = parseToolCall(text);
    if ('arguments' in call) {
      const args = JSON.parse(call.arguments) as { query?: unknown };
      if (typeof args.query === 'string') return args.query;
    }
  }
  return text;
}

/** The replayed trajectory as a record (tokens with mask, log-probs and offsets), tied to the record it replays. */
export function replayRecord(
  source: Pick<TrajectoryRecord, 'id' | 'question' | 'golden_answers'>,
  result: ReplayResult,
  model: OnnxModel,
  meta: { mode: ReplayMode; checkpoint: string; seed?: number; temperature?: number },
): TrajectoryRecord {
  return {
    id: `${source.id}#replay-${meta.mode}`,
    question: source.question,
    ...(source.golden_answers ? { golden_answers: source.golden_answers } : {}),
    response: result.response,
    dialect: model.info.dialect as TrajectoryRecord['dialect'],
    tokens: { ids: result.ids, loss_mask: result.lossMask, logprobs: result.logprobs, offsets: result.offsets },
    meta: {
      stage: 'replay',
      replay_of: source.id,
      mode: meta.mode,
      checkpoint: meta.checkpoint,
      temperature: meta.temperature ?? 0,
      seed: meta.seed ?? 0,
      truncated: result.truncated,
      latency_ms: result.steps.map((s) => Math.round(s.latencyMs)),
    },
  };
}
