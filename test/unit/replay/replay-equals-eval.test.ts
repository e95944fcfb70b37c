// Records of a greedy evaluation (`coa_trainer eval`, the trainer's rollout loop), replayed with
// their exported checkpoint and the run's own settings read from the run directory, are the stored trajectories
// token for token — or differ only where the top two log-probs nearly tie (float differences between PyTorch and
// onnxruntime can flip those), which the test reports. A replay searching with top_k 3 instead of the run's top_k
// is shown to differ, so the equality depends on the settings being the run's.
import test from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { OnnxModel } from '../../../src/replay/model';
import { replayQuestion, replayRecord } from '../../../src/replay/agent';
import { replaySettings } from '../../../src/replay/runSettings';
import { startEnvServer } from '../../../src/env/server';
import { EnvClient } from '../../../src/env/client';
import { scoreRecords } from '../../../src/core/rewards';
import { EVAL_RUN_CONFIG, evalRun } from './evalRun';

/** Top-1 minus top-2 logit (= log-prob gap) after `prefix`, from a fresh decoder fed the stored ids. */
async function topGap(model: OnnxModel, prefix: number[]): Promise<number> {
  const out = await model.decoder().feed(prefix);
  const row = out.logits.subarray(out.logits.length - out.vocab);
  let a = -Infinity;
  let b = -Infinity;
  for (const x of row) {
    if (x > a) [a, b] = [x, a];
    else if (x > b) b = x;
  }
  return a - b;
}

const NEAR_TIE = 1e-3;

test("greedy evaluation records replay token for token with their checkpoint and the run's own settings", {
  timeout: 600_000,
}, async (t) => {
  const { runDir, onnx, records } = evalRun();
  const s = replaySettings(onnx, records[0]);
  assert.ok(s, 'settings found in the run directory');
  const e = EVAL_RUN_CONFIG.eval;
  assert.deepEqual(
    [s.kind, s.topK, s.maxTurns, s.maxNewTokens, s.maxObsTokens, s.maxLen, s.scheme],
    ['eval', e.top_k, e.max_turns, e.max_new_tokens, e.max_obs_tokens, e.max_len, 'em'],
  );
  assert.equal(s.corpus, join(runDir, 'data', 'corpus.jsonl'));

  const model = await OnnxModel.load(onnx);
  t.after(() => model.release());
  const server = await startEnvServer({ corpus: s.corpus!, dialect: s.dialect });
  t.after(() => server.close());
  const client = new EnvClient({ url: server.url, token: server.token });
  const search = (topK: number) => async (q: string) =>
    (await client.search({ queries: [q], top_k: topK, dialect: s.dialect })).observations[0];
  const replay = (question: string, topK: number) =>
    replayQuestion(model, question, {
      mode: 'env',
      tool: search(topK),
      promptTemplate: s.promptTemplate,
      maxTurns: s.maxTurns,
      maxNewTokens: s.maxNewTokens,
      maxObservationTokens: s.maxObsTokens,
      maxTotal: s.maxLen ?? undefined,
    });

  let same = 0;
  let searched = 0;
  let oldDiffers = 0;
  const ties: string[] = [];
  for (const rec of records) {
    const stored = rec.tokens!;
    const r = await replay(rec.question, s.topK);
    searched += r.toolCalls > 0 ? 1 : 0;
    if (r.ids.length === stored.ids.length && r.ids.every((id, i) => id === stored.ids[i])) {
      same++;
      assert.deepEqual(r.lossMask, stored.loss_mask, `${rec.id}: loss mask`);
      assert.equal(r.response, rec.response, `${rec.id}: response text`);
      // The run's reward for it, recomputed from the replay, is the stored one.
      const [b] = scoreRecords(
        [{ ...replayRecord(rec, r, model, { mode: 'env', checkpoint: onnx }), golden_answers: rec.golden_answers }],
        s.scheme,
        s.params,
      );
      assert.deepEqual(
        [b.total, b.format_ok, b.tool_calls],
        [rec.reward!.total, rec.reward!.format_ok, rec.reward!.tool_calls],
        `${rec.id}: reward`,
      );
    } else {
      // Where they part, the stored token must have been a near-tie for the model given the same prefix.
      let k = 0;
      while (k < r.ids.length && k < stored.ids.length && r.ids[k] === stored.ids[k]) k++;
      const gap = await topGap(model, [...r.promptIds, ...stored.ids.slice(0, k)]);
      ties.push(
        `${rec.id}: token ${k} of ${stored.ids.length} (stored ${stored.ids[k]}, replayed ${r.ids[k]}), top-2 log-prob gap ${gap.toExponential(2)}`,
      );
      assert.ok(
        gap < NEAR_TIE,
        `${rec.id} differs at token ${k} where the model is not near a tie (gap ${gap}): replay is not what evaluation produced`,
      );
    }
    if (r.toolCalls > 0) {
      const old = await replay(rec.question, 3);
      if (old.ids.length !== r.ids.length || old.ids.some((id, i) => id !== r.ids[i])) oldDiffers++;
    }
  }
  t.diagnostic(
    `${same} of ${records.length} records identical token for token; ${searched} of them searched; near-ties: ${ties.length ? ties.join('; ') : 'none'}`,
  );
  t.diagnostic(`with the old hard-coded top_k 3, ${oldDiffers} of ${searched} searching records replay differently`);
  assert.ok(
    records.length >= 8 && searched >= 3,
    `the evaluation should search on several questions (${searched} of ${records.length})`,
  );
  assert.ok(
    same >= records.length - 1,
    `at most one near-tie expected on ${records.length} records: ${ties.join('; ')}`,
  );
  assert.ok(oldDiffers > 0, "the run's top_k matters: a replay searching 3 documents is another trajectory");
});
