// Train Stage's and Collect Trajectories' inputs checked at the editor's edge: a scripted command argument against
// its schema (a command's arguments are `unknown`), and a user's *.run.json against the core's run-config schema,
// kept as written (no defaults filled in) and, when wrong, said with its file, line, column and field.
import test from 'node:test';
import assert from 'node:assert/strict';
import { commandArgument } from '../../../src/extension/commandArgs';
import { CollectRequestSchema, TrainRequestSchema } from '../../../src/extension/providers/train/requests';
import { checkedRunConfigInput } from '../../../src/core/data/configErrors';
import { DataError } from '../../../src/core/data/errors';

test('a scripted Train Stage request is handed on as given; none means the picks ask', () => {
  const request = {
    stage: 'sft2',
    config: 'configs/a.run.json',
    checkpoint: '/runs/r/stages/sft1/final',
    data: { train: '/d/t.parquet', sft: ['/d/a.coa.jsonl'] },
  };
  assert.deepEqual(commandArgument(TrainRequestSchema, request), { value: request });
  assert.deepEqual(
    commandArgument(TrainRequestSchema, { stage: 'pipeline', config: '/w/examples/embedded-demo.run.json' }),
    { value: { stage: 'pipeline', config: '/w/examples/embedded-demo.run.json' } },
  );
  assert.deepEqual(commandArgument(TrainRequestSchema, undefined), { value: undefined });
  assert.deepEqual(
    commandArgument(CollectRequestSchema, { config: 'c.run.json', teacherUrl: 'http://127.0.0.1:8000/v1' }),
    { value: { config: 'c.run.json', teacherUrl: 'http://127.0.0.1:8000/v1' } },
  );
});

test('a wrong scripted request is refused with the field at fault (it used to be cast and used)', () => {
  const problem = (schema: Parameters<typeof commandArgument>[0], arg: unknown) => {
    const r = commandArgument(schema, arg);
    assert.ok('problem' in r, `${JSON.stringify(arg)} was accepted`);
    return r.problem;
  };
  assert.match(problem(TrainRequestSchema, { stage: 'sft9' }), /^stage: /);
  assert.match(
    problem(TrainRequestSchema, { stage: 'rl2-otc' }),
    /^stage: /,
    'a variant trained inside the pipeline is not a stage of its own',
  );
  assert.match(problem(TrainRequestSchema, { stage: 'sft2', data: { sft: '/d/a.coa.jsonl' } }), /^data\.sft: /);
  assert.match(problem(TrainRequestSchema, { stage: 'sft2', cofig: 'a.run.json' }), /cofig/);
  assert.match(problem(TrainRequestSchema, 'sft2'), /object/);
  assert.match(problem(TrainRequestSchema, {}), /^stage: /);
  assert.match(problem(CollectRequestSchema, { teacher: 5 }), /^teacher: /);
});

test("a user's run config: checked by the core's schema and kept as written; a wrong one names file, line, column and field", () => {
  const raw = '{\n  // the demo, longer\n  "seed": 3,\n  "stages": { "sft2": { "steps": 9 } }\n}\n';
  const value = { seed: 3, stages: { sft2: { steps: 9 } } };
  assert.deepEqual(checkedRunConfigInput('/w/a.run.json', raw, value), value, 'no defaults are filled in');
  const bad = '{\n  "seed": 3,\n  "stages": { "sft2": { "stepz": 9 } }\n}\n';
  assert.throws(
    () => checkedRunConfigInput('/w/b.run.json', bad, { seed: 3, stages: { sft2: { stepz: 9 } } }),
    (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.deepEqual([e.file, e.line, e.column, e.field], ['/w/b.run.json', 3, 23, 'stages.sft2']);
      assert.match(e.detail, /stepz/);
      return true;
    },
  );
  assert.throws(
    () => checkedRunConfigInput('/w/c.run.json', '{"seed": -1.5}', { seed: -1.5 }),
    /\/w\/c\.run\.json:1:10: error: seed: /,
  );
});
