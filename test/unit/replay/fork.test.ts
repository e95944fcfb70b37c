// ★ Fork on a whole demo pipeline run's RL-2-OTC rollouts and that stage's own checkpoint (exported to
// ONNX by the trainer, test/fixtures/demoRun.ts), against the run's environment server: where a given response
// leaves the agent loop; a given prefix is the tokens the model saw (re-encoding every step boundary of the
// rollouts gives the stored ids); a fork from an action starts with that action's observation from the server; a
// fork from an edited step regenerates the rest and is scored like its source (OTC-GRPO with the source group's n).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { demoRunWithOnnx } from '../../fixtures/demoRun';
import { OnnxModel } from '../../../src/replay/model';
import { replayQuestion } from '../../../src/replay/agent';
import { forkRecord } from '../../../src/replay/fork';
import { continueFrom } from '../../../src/replay/given';
import { replaySettings, type ReplaySettings } from '../../../src/replay/runSettings';
import { startEnvServer, type EnvServer } from '../../../src/env/server';
import { EnvClient } from '../../../src/env/client';
import { scan } from '../../../src/core/scanner';
import { formatOf } from '../../../src/core/rewards';
import type { TrajectoryRecord } from '../../../src/core/record';

test('where a given response leaves the agent loop', () => {
  assert.deepEqual(continueFrom('<think> a </think> <search> who wrote x </search>', 'coa'), {
    text: '<think> a </think> <search> who wrote x </search>',
    actions: 1,
    query: 'who wrote x',
    answered: false,
  });
  assert.deepEqual(continueFrom('<think> a </think> <search> q </search> <observation> d </observation> ', 'coa'), {
    text: '<think> a </think> <search> q </search> <observation> d </observation> ',
    actions: 1,
    query: null,
    answered: false,
  });
  assert.equal(continueFrom('<think> a </think> <answer> b </answer>', 'coa').answered, true);
  const open = continueFrom('<think> rofes born in', 'coa');
  assert.deepEqual(
    [open.actions, open.query, open.answered],
    [0, null, false],
    'an unclosed step: the model goes on writing it',
  );
  assert.equal(continueFrom('<search> q', 'coa').query, null, 'an unclosed action has no query yet');
});

let dir: string;
let model: OnnxModel;
let env: EnvServer;
let onnx: string;
let records: TrajectoryRecord[];
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'coa-fork-'));
  onnx = demoRunWithOnnx(dir);
  model = await OnnxModel.load(onnx, { threads: 1 });
  records = readFileSync(join(dir, 'stages/rl2-otc/rollouts.coa.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as TrajectoryRecord);
  env = await startEnvServer({
    corpus: join(dir, 'data/corpus.jsonl'),
    indexDir: mkdtempSync(join(tmpdir(), 'coa-fork-index-')),
  });
});
after(async () => {
  await env?.close();
  await model?.release();
});

function settingsOf(r: TrajectoryRecord): ReplaySettings {
  const s = replaySettings(onnx, r);
  assert.ok(s, "the run directory above the checkpoint gives the run's settings");
  return s;
}

async function fork(r: TrajectoryRecord, prefix: string) {
  const s = settingsOf(r);
  const client = new EnvClient({ url: env.url, token: env.token });
  const queries: string[] = [];
  const tool = async (q: string) => {
    queries.push(q);
    return (await client.search({ queries: [q], top_k: s.topK, dialect: s.dialect })).observations[0];
  };
  const result = await replayQuestion(model, r.question, {
    mode: 'env',
    tool,
    prefix,
    promptTemplate: s.promptTemplate,
    maxTurns: s.maxTurns,
    maxNewTokens: s.maxNewTokens,
    maxObservationTokens: s.maxObsTokens,
    maxTotal: s.maxLen ?? undefined,
  });
  return { result, queries, s };
}

test('a given prefix is the tokens the model saw: every step boundary of 1,536 rollouts re-encodes to the stored ids', async () => {
  assert.equal(records.length, 1536);
  let boundaries = 0;
  for (const r of records) {
    const offsets = r.tokens!.offsets!;
    for (const seg of scan(r.response, { dialect: 'coa' }).segments) {
      // The boundary after a step: the first token starting at or after its end.
      const k = offsets.findIndex((o) => o >= seg.end);
      const end = k < 0 ? r.tokens!.ids.length : k;
      const text = k < 0 ? r.response : r.response.slice(0, offsets[k]);
      assert.deepEqual(
        (await model.tokenizer.encode(text)).ids,
        r.tokens!.ids.slice(0, end),
        `${r.id} up to ${seg.kind} at ${seg.end}`,
      );
      boundaries++;
    }
  }
  assert.ok(boundaries > 8000, `${boundaries} boundaries`);
});

test("a fork from an action starts with that action's observation from the environment server", async () => {
  const r = records.find((x) => x.id === 'q0315-5-0')!;
  const search = scan(r.response, { dialect: 'coa' }).segments.find((s) => s.kind === 'action')!;
  const { result, queries } = await fork(r, r.response.slice(0, search.end));
  assert.equal(queries[0], 'duman works for', "the given action's query is searched first");
  assert.equal(result.steps[0].kind, 'observation');
  assert.ok(result.given! > 0);
  assert.deepEqual(
    result.lossMask.slice(0, result.given),
    new Array(result.given).fill(0),
    'given tokens are never trained',
  );
  assert.ok(result.logprobs.slice(0, result.given).every((l) => l === null));
  assert.ok(result.response.startsWith(r.response.slice(0, search.end).trimEnd()), 'the fork keeps the given steps');
  // The server's observation is the one the rollout saw (same corpus, same top_k: the run's settings).
  const obs = scan(r.response, { dialect: 'coa' }).segments.find((s) => s.kind === 'observation')!;
  assert.equal(result.steps[0].text.trim(), r.response.slice(obs.start, obs.end).trim());
});

test('an edited step changes what follows: "rofes born in stokril" in the last thought, and the reward follows (OTC-GRPO with the source group\'s n)', async () => {
  const r = records.find((x) => x.id === 'q0232-20-0')!;
  assert.equal(r.reward!.total, 1);
  const think = scan(r.response, { dialect: 'coa' })
    .segments.filter((s) => s.kind === 'think')
    .at(-1)!;
  const edited =
    r.response.slice(0, think.start) + r.response.slice(think.start, think.end).replace('sodas', 'stokril');
  const { result, s } = await fork(r, edited);
  const record = forkRecord(
    r,
    result,
    { step: 4, kind: 'think', edited: true },
    { mode: 'env', checkpoint: onnx, dialect: model.info.dialect, scheme: s.scheme, params: s.params },
  );
  assert.equal(record.id, 'q0232-20-0#fork-4');
  assert.equal(formatOf(record).answer, 'stokril', record.response);
  assert.equal(record.reward!.scheme, 'otc-grpo');
  assert.equal(record.reward!.total, 0);
  assert.equal(record.reward!.optimal_tool_calls, r.reward!.optimal_tool_calls, "scored with its source group's n");
  assert.deepEqual(
    [record.meta!.fork_of, record.meta!.fork_step, record.meta!.fork_edited, record.meta!.fork_of_reward],
    ['q0232-20-0', 4, true, 1],
  );
  // Unedited, the same step gives the source's own answer back.
  const same = await fork(r, r.response.slice(0, think.end));
  assert.equal(formatOf({ ...r, response: same.result.response }).answer, 'sodas');
  // The observation edited the same way does not move this policy: it answers from what it memorised (docs/replay.md).
  const obs = scan(r.response, { dialect: 'coa' }).segments.find((x) => x.kind === 'observation')!;
  const lied = await fork(
    r,
    r.response.slice(0, obs.start) + r.response.slice(obs.start, obs.end).split('sodas').join('stokril'),
  );
  assert.ok(lied.result.response.includes('rofes born in stokril'), 'the fork saw the edited observation');
  assert.equal(formatOf({ ...r, response: lied.result.response }).answer, 'sodas');
});
