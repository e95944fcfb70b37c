// GRPO groups of a rollouts file (src/core/groups.ts): the shared vectors (the trainer's metrics run them too), and a
// whole demo run's RL-2 rollouts grouped per step as the group view shows them — G samples per group, the advantages
// the trainer stored summing to 0, zero-variance groups exactly those whose stored rewards are all equal.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { groupsOfStep, zeroVariance } from '../../../src/core/groups';
import { iterateJsonlText } from '../../../src/core/jsonl';
import { demoRunFile } from '../../fixtures/demoRun';

test("shared vectors: the zero-variance share of a step's groups", () => {
  const { cases } = JSON.parse(readFileSync(join(__dirname, '../../conformance/groups.json'), 'utf8')) as {
    cases: { samples: [number, number, string | number][]; expect: Record<string, number> }[];
  };
  for (const c of cases) {
    const by = new Map<string, number[]>();
    for (const [total, , g] of c.samples) by.set(String(g), [...(by.get(String(g)) ?? []), total]);
    const zero = [...by.values()].filter(zeroVariance).length / by.size;
    assert.ok(Math.abs(zero - c.expect.zero_variance_groups) < 1e-12, JSON.stringify(c));
    // The same through the records path the group view reads.
    const records = c.samples.map(([total, rc, g], i) => ({
      line: i + 1,
      record: {
        id: `s${i}`,
        question: `q ${g}`,
        response: '',
        meta: { step: 3, group: g, sample: i },
        reward: {
          scheme: 'em' as const,
          em: rc,
          f1: rc,
          format_ok: true,
          violations: [],
          tool_calls: 0,
          optimal_tool_calls: null,
          r_tool: 1,
          r_correct: rc,
          total,
        },
      },
    }));
    assert.ok(Math.abs(groupsOfStep(records, 3).zeroVarianceShare! - c.expect.zero_variance_groups) < 1e-12);
  }
});

test("a demo run's RL-2 rollouts: groups of G = 8 with their stored advantages; zero-variance groups have advantage 0", () => {
  const records = [...iterateJsonlText(demoRunFile('stages/rl2/rollouts.coa.jsonl').toString('utf8'))].map((e) => ({
    record: e.record!,
    line: e.line,
  }));
  const step = records[records.length - 1].record.meta!.step!;
  const s = groupsOfStep(records, step);
  assert.ok(s.groups.length >= 8);
  for (const g of s.groups) {
    assert.equal(g.samples.length, 8);
    assert.ok(g.samples.every((x) => x.advantage !== null && x.reward));
    assert.ok(Math.abs(g.samples.reduce((a, x) => a + x.advantage!, 0)) < 1e-5, 'GRPO advantages of a group sum to 0');
    assert.equal(g.zeroVariance, new Set(g.samples.map((x) => x.reward!.total)).size === 1);
    if (g.zeroVariance)
      assert.ok(
        g.samples.every((x) => x.advantage === 0),
        'no gradient in a zero-variance group',
      );
  }
  const zero = s.groups.filter((g) => g.zeroVariance).length;
  assert.equal(s.zeroVarianceShare, zero / s.groups.length);
  assert.ok(zero > 0 && zero < s.groups.length, "the demo's last step has both kinds");
  assert.equal(groupsOfStep(records, 99999).groups.length, 0);
});
