// key=value overrides of a run config: the shared vectors (the trainer runs the same file), and the merged config
// validated by the run config schema with the error naming the override.
import { strict as assert } from 'node:assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { checkRunConfig, loadRunConfig } from '../../../src/core/data/check';
import { DataError } from '../../../src/core/data/errors';
import { applyOverrides, isOverride, OverrideError, parseOverride } from '../../../src/core/overrides';
import vectors from '../../conformance/overrides.json';

for (const c of vectors.cases) {
  test(`override vector: ${c.name}`, () => {
    const run = () =>
      applyOverrides(
        c.config,
        c.args.map((a) => parseOverride(a)),
      );
    if ('error' in c && c.error) {
      assert.throws(run, (e: unknown) => {
        assert.ok(e instanceof OverrideError, String(e));
        assert.equal(e.text, c.error.arg);
        assert.equal(e.key, c.error.key);
        assert.ok(e.message.includes(c.error.contains), `${e.message} lacks ${c.error.contains}`);
        return true;
      });
    } else assert.deepEqual(run(), c.result);
  });
}

test('an override is key=value or ~key; a file name is not', () => {
  assert.ok(isOverride('stages.rl2.lr=1e-5'));
  assert.ok(isOverride('~stages.rl2.lr'));
  assert.ok(isOverride('prompt_template=a=b'));
  assert.ok(!isOverride('run.json'));
  assert.ok(!isOverride('./x=1'));
});

test('coa data check: overrides validated by the schema, the error names the override', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-overrides-'));
  const cfg = join(dir, 'run.json');
  writeFileSync(cfg, '{\n  "seed": 1\n}\n');
  assert.equal(loadRunConfig(cfg, ['stages.rl2.lr=1e-5']).config.stages.rl2.lr, 1e-5);
  assert.equal(loadRunConfig(cfg, ['stages.rl2.lr=1e-5']).config.seed, 1);
  // typed, but out of the schema's range: the schema's own message, at the override
  await assert.rejects(checkRunConfig(cfg, ['stages.rl2.lr=-1']), (e: unknown) => {
    assert.ok(e instanceof DataError);
    assert.equal(e.file, 'command line');
    assert.equal(e.field, 'stages.rl2.lr');
    assert.match(e.message, /override stages\.rl2\.lr=-1/);
    assert.match(e.message, /greater than 0|>0/i);
    return true;
  });
  await assert.rejects(checkRunConfig(cfg, ['seed=1', 'stages.rl2.lrr=1']), (e: unknown) => {
    assert.ok(e instanceof DataError);
    assert.equal(e.line, 2, 'the second argument');
    assert.equal(e.field, 'stages.rl2.lrr');
    assert.match(e.message, /unknown key/);
    return true;
  });
  // a data path given on the command line is checked like one in the file (relative to the config's directory)
  await assert.rejects(checkRunConfig(cfg, ['data.questions.train=missing.parquet']), /no such file/);
});
