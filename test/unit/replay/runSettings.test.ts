// Replay's settings come from the run that made the record (src/replay/runSettings.ts), on a real pipeline run's
// events (the demo's, test/fixtures/live-panel): RL-2-OTC rollouts replay with RL-2's search and OTC-GRPO, RL-2's
// with autocoa, evaluation records with the eval settings and em — never the old hard-coded top_k 3 and em.
import test from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkpointStage, findRunDir, replaySettings } from '../../../src/replay/runSettings';

function demoRun(t: { after: (fn: () => void) => void }): string {
  const root = mkdtempSync(join(tmpdir(), 'coa-replay-settings-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const run = join(root, 'runs', 'demo');
  mkdirSync(join(run, 'stages', 'rl2-otc', 'onnx'), { recursive: true });
  copyFileSync(join(__dirname, '../../fixtures/live-panel/demo-pipeline.events.jsonl'), join(run, 'events.jsonl'));
  return run;
}

test("an RL rollout replays with its own stage's search, limits and reward; a labelled stage with its own reward", (t) => {
  const run = demoRun(t);
  const onnx = join(run, 'stages', 'rl2-otc', 'onnx', 'model.onnx');
  assert.equal(findRunDir(onnx), run);
  assert.equal(checkpointStage(onnx, run), 'rl2-otc');
  const otc = replaySettings(onnx, { meta: { stage: 'rl2-otc', step: 40 } })!;
  assert.deepEqual(
    [otc.kind, otc.topK, otc.maxTurns, otc.maxNewTokens, otc.maxObsTokens, otc.scheme, otc.dialect],
    ['rl', 2, 3, 40, 48, 'otc-grpo', 'coa'],
  );
  assert.match(otc.source, /demo\/events\.jsonl, stage rl2-otc/);
  assert.equal(otc.corpus, join(run, 'data', 'corpus.jsonl'));
  assert.equal(otc.promptTemplate, 'question : {question}\n');
  const rl2 = replaySettings(onnx, { meta: { stage: 'rl2' } })!;
  assert.deepEqual([rl2.kind, rl2.scheme], ['rl', 'autocoa']);
  // A record without a stage: the checkpoint's own stage.
  assert.equal(replaySettings(onnx, {})!.scheme, 'otc-grpo');
});

test("an evaluation record (a results-table setting) replays with the eval settings of its stage's config and em", (t) => {
  const run = demoRun(t);
  const s = replaySettings(join(run, 'stages', 'rl2-otc', 'onnx', 'model.onnx'), { meta: { stage: 'sft-rl-otc' } })!;
  assert.deepEqual([s.kind, s.topK, s.maxTurns, s.maxNewTokens, s.scheme], ['eval', 2, 4, 48, 'em']);
  assert.match(s.source, /stage rl2-otc/);
});

test('runs/<id>/config.json (Train Stage writes it) when the events have no config for the stage; none outside a run', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'coa-replay-settings-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const run = join(root, 'r');
  mkdirSync(join(run, 'stages', 'rl1', 'onnx'), { recursive: true });
  writeFileSync(
    join(run, 'config.json'),
    JSON.stringify({
      dialect: 'search-r1',
      stages: { rl1: { top_k: 5, reward: { scheme: 'em', params: { format_penalty: false } } } },
      env: { corpus: 'wiki.jsonl' },
    }),
  );
  const s = replaySettings(join(run, 'stages', 'rl1', 'onnx', 'model.onnx'), { meta: { stage: 'rl1' } })!;
  assert.deepEqual(
    [s.topK, s.scheme, s.params, s.dialect, s.corpus, s.source],
    [5, 'em', { format_penalty: false }, 'search-r1', join(run, 'wiki.jsonl'), 'r/config.json'],
  );
  assert.equal(replaySettings(join(root, 'elsewhere', 'model.onnx'), {}), null);
});
