// The one stage table: it names every stage the trainer's pipeline runs and every setting of its results table
// (read from the Python sources, so a stage added there without a description here fails), and its words are the
// ones the issue asked for (RL-1 is the simulated environment, RL-2-OTC a sibling of RL-2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RESULT_SETTINGS, STAGE_TABLE, stageFamily, stageInfo, stageLabelOf, stageOrder } from '../../../src/core/stages';
import { STAGE_PICKS } from '../../../src/extension/providers/train/picks';

const TRAINER = join(__dirname, '../../../src/trainer/coa_trainer');

test('every pipeline step of the trainer (pipeline.py STEPS) is in the table, in the same order', () => {
  const src = readFileSync(join(TRAINER, 'pipeline.py'), 'utf8');
  const steps = [.../^STEPS = \(([^)]*)\)/m.exec(src)![1].matchAll(/"([^"]+)"/g)].map((m) => m[1]).filter((s) => s !== 'results');
  assert.deepEqual(steps, STAGE_TABLE.map((s) => s.id));
});

test('every results setting of the trainer (results.py SETTINGS) is in the table with the stage it evaluates', () => {
  const src = readFileSync(join(TRAINER, 'results.py'), 'utf8');
  const block = /^SETTINGS[^=]*= \[([\s\S]*?)^\]/m.exec(src)![1];
  const rows = [...block.matchAll(/\("([^"]+)", "([^"]+)", "[^"]+"\)/g)].map((m) => ({ id: m[1], stage: m[2] }));
  assert.deepEqual(rows, RESULT_SETTINGS.map((s) => ({ id: s.id, stage: s.stage })));
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

test('the Train Stage picker shows the table\'s descriptions', () => {
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
