// A tag opened again before it is closed (COA017) fails the reward's format gate: letting a later </search> close an
// unclosed <search> would pass it, swallowing the observation, think and search between. The shared
// vectors (test/conformance/format.json) pin the segments; these tests follow the finding through the reward and
// the language server's quick fix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { scoreRecords } from '../../../src/core/rewards';
import { TrajectoryService } from '../../../src/server/service';

const GOOD =
  '<think> need the director </think> <search> jaws director</search> <observation> doc 1 ( title : jaws ) jaws is a 1975 film by steven spielberg . </observation> ' +
  '<think> check </think> <search> jaws 1975 director </search> <observation> doc 2 ( title : jaws ) directed by steven spielberg </observation> <think> found it </think> <answer> steven spielberg </answer>';
// The rollout with its first </search> removed.
const BROKEN = GOOD.replace('</search>', '');
const record = (response: string) => ({
  id: 'q1-0',
  question: 'Who directed Jaws?',
  golden_answers: ['Steven Spielberg'],
  response,
  dialect: 'coa' as const,
});

test('removing the first </search> of a rewarded rollout zeroes its reward under every scheme', () => {
  for (const scheme of ['autocoa', 'em', 'otc-grpo'] as const) {
    const [good] = scoreRecords([record(GOOD)], scheme);
    const [broken] = scoreRecords([record(BROKEN)], scheme);
    assert.equal(good.total, 1, scheme);
    assert.deepEqual([broken.total, broken.format_ok, broken.violations], [0, false, ['COA017']], scheme);
    // Still two calls: the unclosed search is a call, not swallowed into one with everything after it.
    assert.equal(broken.tool_calls, 2, scheme);
  }
});

test('the language server reports it at the unclosed tag and its quick fix closes it', () => {
  const uri = 'file:///w/r.coa.jsonl';
  const raw = JSON.stringify(record(BROKEN));
  const s = new TrajectoryService();
  s.open(uri, 'coa-jsonl', 1, raw);
  const diags = s.diagnose(uri);
  assert.deepEqual(
    diags.map((d) => d.code),
    ['COA017'],
  );
  assert.equal(raw.slice(diags[0].range.start.character, diags[0].range.end.character), '<search>');
  const [edit] = s.codeActions(uri, diags).flatMap((a) => a.edit?.changes?.[uri] ?? []);
  assert.equal(edit.newText, '</search>');
  const fixed = raw.slice(0, edit.range.start.character) + edit.newText + raw.slice(edit.range.end.character);
  assert.equal(JSON.parse(fixed).response, GOOD);
  s.change(uri, 2, [{ text: fixed }]);
  assert.deepEqual(s.diagnose(uri), []);
});
