// The one stage table: it names every stage the trainer's pipeline runs and every setting of its results table
// (the trainer reads it from the generated schemas/stages.json: checked by running it), and its words are the
// ones the issue asked for (RL-1 is the simulated environment, RL-2-OTC a sibling of RL-2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  RESULT_SETTINGS,
  STAGE_TABLE,
  stageFamily,
  stageInfo,
  stageLabelOf,
  stageOrder,
} from '../../../src/core/stages';
import { STAGE_PICKS } from '../../../src/extension/providers/train/picks';

const REPO = join(__dirname, '../../..');

/** What the trainer makes of the table: schemas generated from this checkout's sources, read by its Python. */
function trainerView(t: { after: (fn: () => void) => void }): {
  steps: string[];
  stages: string[];
  rl: string[];
  settings: [string, string, string][];
} {
  const python = join(REPO, '.venv/bin/python');
  if (!existsSync(python)) throw new Error(`${python} is missing: run npm run setup:python`);
  const dir = mkdtempSync(join(tmpdir(), 'coa-stages-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/gen-schemas.ts', dir], { cwd: REPO, stdio: 'ignore' });
  const code =
    'import json; from coa_trainer.pipeline import pipeline; from coa_trainer.evaluation import results; from coa_trainer.base import runlayout; from coa_trainer.cli import build_parser; ' +
    'print(json.dumps({"steps": pipeline.STEPS, "stages": runlayout.STAGE_ORDER, "rl": pipeline.RL_STEPS, "settings": results.SETTINGS}))';
  const out = execFileSync(python, ['-c', code], {
    cwd: REPO,
    encoding: 'utf8',
    env: { ...process.env, COA_SCHEMAS_DIR: dir, PYTHONPATH: join(REPO, 'src/trainer') },
  });
  return JSON.parse(out);
}

test('the trainer reads its stages, pipeline steps and results settings from the table (schemas/stages.json)', (t) => {
  const v = trainerView(t);
  assert.deepEqual(v.steps, [...STAGE_TABLE.map((s) => s.id), 'results']);
  assert.deepEqual(
    v.stages,
    STAGE_TABLE.filter((s) => !s.trains).map((s) => s.id),
  );
  assert.deepEqual(v.rl, ['rl1', 'rl2', 'rl2-otc']);
  assert.deepEqual(
    v.settings,
    RESULT_SETTINGS.map((s) => [s.id, s.stage, s.mode]),
  );
  assert.deepEqual(
    v.settings.map((s) => s[2]),
    ['no-tool', 'workflow', 'agent', 'agent', 'agent'],
  );
});

test('descriptions: RL-1 simulated, RL-2 real tools, RL-2-OTC a sibling of RL-2 from RL-1', () => {
  assert.match(stageInfo('rl1')!.description, /simulated environment/);
  assert.match(stageInfo('rl1')!.description, /writes its own observations/);
  assert.doesNotMatch(stageInfo('rl1')!.description, /against the environment server/);
  assert.match(stageInfo('rl2')!.description, /real tools/);
  assert.equal(stageInfo('rl2-otc')!.from, 'rl1');
  assert.equal(stageInfo('rl2')!.from, 'rl1');
  assert.match(stageInfo('rl2-otc')!.description, /Sibling of RL-2/);
});

test("the Train Stage picker shows the table's descriptions", () => {
  assert.equal(STAGE_PICKS.find((p) => p.id === 'rl1')!.detail, stageInfo('rl1')!.description);
  assert.ok(!STAGE_PICKS.some((p) => p.id === 'rl2-otc'), 'rl2-otc is a labelled rl2 run, trained by the pipeline');
});

test('labels, order and families', () => {
  assert.equal(stageLabelOf('rl2-otc'), 'RL-2-OTC');
  assert.equal(stageLabelOf('sft12'), 'SFT-1+2');
  assert.equal(stageLabelOf('pipeline'), 'Whole pipeline');
  assert.equal(stageLabelOf('my-stage'), 'my-stage');
  assert.ok(stageOrder('rl1') < stageOrder('rl2') && stageOrder('rl2') < stageOrder('rl2-otc'));
  assert.equal(stageOrder('custom'), STAGE_TABLE.length);
  assert.equal(stageFamily('rl2'), 'rl2');
  assert.equal(stageFamily('rl2-otc'), 'rl2');
  assert.equal(stageFamily('rl2-lr3e4'), 'rl2');
  assert.equal(stageFamily('rl1'), 'rl1');
  assert.equal(stageFamily('sft1'), 'sft1');
  assert.equal(stageFamily('pretrain-1'), 'pretrain-1');
});
