// What a replay runs with: the settings of the run that produced the record, read from its run directory, so a
// replayed trajectory is the one training (or evaluation) would produce. Fixed replay settings are wrong for
// some run: searching with top_k 3 and scoring with `em` replays a record that RL-2 (2 documents searched, `autocoa`
// reward) rewarded 1 as a wrong answer. Independent of VS Code.
//
// Which settings: an RL rollout (meta.stage an RL stage or a label of one, e.g. rl2-otc) replays with that stage's
// search (top_k), limits (max_turns, max_new_tokens, max_obs_tokens, max_len) and reward (scheme and params); any
// other record — a greedy evaluation's, a results-table setting's — with the run's `eval` settings and `em`, as
// `coa_trainer eval` grades. The config is the stage's own (its last run_started event: the full config, defaults
// applied, a labelled stage's own reward included), else runs/<id>/config.json, else the run's last run_started.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { RunConfigSchema, type RunConfig } from '../core/config';
import type { DialectName } from '../core/dialects';
import type { RewardParams } from '../core/rewards';
import type { Scheme, TrajectoryRecord } from '../core/record';
import { resultSetting, stageInfo } from '../core/stages';

export interface ReplaySettings {
  /** Where they came from, for the replay's progress line and log ("runs/r1/events.jsonl, stage rl2-otc"). */
  source: string;
  runDir: string | null;
  /** The kind of record they were chosen for: an RL stage's rollouts, or an evaluation. */
  kind: 'rl' | 'eval';
  dialect: DialectName;
  promptTemplate: string;
  topK: number;
  maxTurns: number;
  maxNewTokens: number;
  maxObsTokens: number;
  /** Prompt + response tokens at most; null: the model's context (the trainer's `max_len: null`). */
  maxLen: number | null;
  scheme: Scheme;
  params: RewardParams;
  /** The corpus the run's environment server searched (the trainer's corpus_path). */
  corpus: string | null;
}

/** The run directory above an exported checkpoint (runs/<id>/stages/<stage>/onnx/model.onnx), if any. */
export function findRunDir(checkpoint: string): string | null {
  let d = dirname(resolve(checkpoint));
  for (let i = 0; i < 6; i++, d = dirname(d)) {
    if (existsSync(join(d, 'events.jsonl')) || (existsSync(join(d, 'config.json')) && existsSync(join(d, 'stages'))))
      return d;
    if (dirname(d) === d) break;
  }
  return null;
}

/** The stage directory a checkpoint was exported from (stages/<stage>/onnx/model.onnx → <stage>), if any. */
export function checkpointStage(checkpoint: string, runDir: string): string | null {
  const rel = resolve(checkpoint)
    .slice(resolve(runDir).length + 1)
    .split(/[\\/]/);
  return rel[0] === 'stages' && rel.length > 2 ? rel[1] : null;
}

function parseConfig(raw: unknown): RunConfig | null {
  const r = RunConfigSchema.safeParse(raw);
  return r.success ? r.data : null;
}

/** run_started configs of a run, newest last, by stage label. */
function startedConfigs(runDir: string): { stage: string; config: unknown }[] {
  let text: string;
  try {
    text = readFileSync(join(runDir, 'events.jsonl'), 'utf8');
  } catch {
    return [];
  }
  const out: { stage: string; config: unknown }[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes('"run_started"')) continue;
    try {
      const e = JSON.parse(line) as { type?: string; stage?: string; config?: unknown };
      if (e.type === 'run_started' && typeof e.stage === 'string' && e.config && typeof e.config === 'object')
        out.push({ stage: e.stage, config: e.config });
    } catch {
      /* a torn last line: skipped, as the live panel does */
    }
  }
  return out;
}

/** The run config that applies to `stage` (see the file comment), with where it was found. */
export function runConfigFor(runDir: string, stage: string | null): { config: RunConfig; source: string } | null {
  const started = startedConfigs(runDir);
  const rel = (f: string) => `${basename(runDir)}/${f}`;
  if (stage) {
    const own = started.filter((s) => s.stage === stage).pop();
    const config = own && parseConfig(own.config);
    if (config) return { config, source: `${rel('events.jsonl')}, stage ${stage}` };
  }
  try {
    const config = parseConfig(JSON.parse(readFileSync(join(runDir, 'config.json'), 'utf8')));
    if (config) return { config, source: rel('config.json') };
  } catch {
    /* none, or not JSON: the events are the next source */
  }
  for (const s of [...started].reverse()) {
    const config = parseConfig(s.config);
    if (config) return { config, source: `${rel('events.jsonl')}, stage ${s.stage}` };
  }
  return null;
}

/** The corpus the run's environment server searched: data.corpus, else env.corpus, else the benchmark's. */
export function corpusOf(config: RunConfig, runDir: string): string {
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(runDir, p));
  if (config.data?.corpus) return abs(config.data.corpus);
  if (config.env.corpus) return abs(config.env.corpus);
  return join(config.benchmark.data_dir ? abs(config.benchmark.data_dir) : join(runDir, 'data'), 'corpus.jsonl');
}

/** The settings a record replays with under a run config (see the file comment). */
export function settingsFrom(
  config: RunConfig,
  stage: string | null,
  source: string,
  runDir: string | null,
): ReplaySettings {
  const info = stage ? stageInfo(stage) : undefined;
  const base = {
    source,
    runDir,
    dialect: config.dialect,
    promptTemplate: config.prompt_template,
    corpus: runDir ? corpusOf(config, runDir) : null,
  };
  if (info?.kind === 'rl') {
    const s = config.stages[(info.trains ?? info.id) as 'rl1' | 'rl2'];
    return {
      ...base,
      kind: 'rl',
      topK: s.top_k,
      maxTurns: s.max_turns,
      maxNewTokens: s.max_new_tokens,
      maxObsTokens: s.max_obs_tokens,
      maxLen: s.max_len,
      scheme: s.reward.scheme,
      params: s.reward.params as RewardParams,
    };
  }
  const e = config.eval;
  return {
    ...base,
    kind: 'eval',
    topK: e.top_k,
    maxTurns: e.max_turns,
    maxNewTokens: e.max_new_tokens,
    maxObsTokens: e.max_obs_tokens,
    maxLen: e.max_len ?? null,
    scheme: 'em',
    params: {},
  };
}

/**
 * The settings to replay `record` with a checkpoint: from the checkpoint's run directory (the record's own stage,
 * else the checkpoint's), or null when the checkpoint lies in no run directory (the caller falls back to the
 * editor's settings and says so).
 */
export function replaySettings(checkpoint: string, record: Pick<TrajectoryRecord, 'meta'>): ReplaySettings | null {
  const runDir = findRunDir(checkpoint);
  if (!runDir) return null;
  const recordStage = typeof record.meta?.stage === 'string' ? record.meta.stage : null;
  // A results-table setting (sft-rl-otc) is an evaluation of a stage's model (rl2-otc): that stage's config.
  const configStage =
    (recordStage && resultSetting(recordStage)?.stage) ?? recordStage ?? checkpointStage(checkpoint, runDir);
  const found = runConfigFor(runDir, configStage);
  if (!found) return null;
  return settingsFrom(found.config, recordStage ?? checkpointStage(checkpoint, runDir), found.source, runDir);
}

/** One line saying what a replay runs with. */
export function describeSettings(s: ReplaySettings): string {
  return `${s.kind === 'rl' ? 'RL stage' : 'evaluation'} settings from ${s.source}: top_k ${s.topK}, max turns ${s.maxTurns}, ${s.maxNewTokens} new tokens per turn, reward ${s.scheme}`;
}
