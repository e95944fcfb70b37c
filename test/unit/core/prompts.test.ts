// The per-dialect prompt table (src/core/prompts.ts, read by the trainer as schemas/prompts.json) teaches each
// dialect's own tags: an instruction naming another dialect's tags would train the wrong format.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, DIALECT_NAMES } from '../../../src/core/dialects';
import { DIALECT_PROMPTS } from '../../../src/core/prompts';

test('every dialect has a prompt whose user turn takes the question once', () => {
  assert.deepEqual(Object.keys(DIALECT_PROMPTS).sort(), [...DIALECT_NAMES].sort());
  for (const name of DIALECT_NAMES) {
    assert.equal(DIALECT_PROMPTS[name].user.split('{question}').length, 2, name);
  }
});

test("each prompt names its dialect's action, observation and answer form", () => {
  for (const name of DIALECT_NAMES) {
    const d = DIALECTS[name];
    const p = DIALECT_PROMPTS[name];
    const text = `${p.system ?? ''}\n${p.user}`;
    const action = d.action.style === 'per-tool' ? { open: '<search>', close: '</search>' } : d.action.tags;
    for (const tag of [action.open, action.close, d.observation.open, d.observation.close, d.think.open]) {
      assert.ok(text.includes(tag), `${name}: ${tag} missing`);
    }
    if (d.answer.style === 'tag')
      assert.ok(text.includes(d.answer.tags.open) && text.includes(d.answer.tags.close), name);
    else assert.ok(text.includes('\\boxed{'), `${name}: \\boxed{} missing`);
  }
});
