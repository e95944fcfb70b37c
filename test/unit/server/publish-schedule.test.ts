// When diagnostics go out (src/server/publishSchedule.ts), on node:test's mock clock: an edit after a quiet moment
// at once; a burst of edits twice (its first, then once it pauses); a long burst at most every PUBLISH_MAX_DELAY_MS;
// nothing after a close. The stdio side (1,000 edits over the wire) is test/unit/server/burst.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PUBLISH_DELAY_MS, PUBLISH_MAX_DELAY_MS, PublishSchedule } from '../../../src/server/publishSchedule';

test('one edit after a quiet moment is published at once; a burst twice: its first edit and once it pauses', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  const out: [string, number][] = [];
  const s = new PublishSchedule((uri) => out.push([uri, Date.now()]));
  s.changed('a'); // opened
  assert.deepEqual(out, [['a', 0]]);
  t.mock.timers.tick(1000);
  s.changed('a');
  assert.deepEqual(out.at(-1), ['a', 1000], 'a lone edit: no delay');
  t.mock.timers.tick(1000);
  for (let k = 0; k < 1000; k++) s.changed('a'); // 1,000 edits in the same instant
  assert.equal(out.length, 3, "the burst's first edit");
  t.mock.timers.tick(PUBLISH_DELAY_MS - 1);
  assert.equal(out.length, 3);
  t.mock.timers.tick(1);
  assert.deepEqual(out.at(-1), ['a', 2000 + PUBLISH_DELAY_MS], 'then one more once it pauses');
  t.mock.timers.tick(10 * PUBLISH_DELAY_MS);
  assert.equal(out.length, 4);
});

test('an edit every 10 ms: published at most every PUBLISH_MAX_DELAY_MS, not never; documents apart; none after close', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  const out: [string, number][] = [];
  const s = new PublishSchedule((uri) => out.push([uri, Date.now()]));
  t.mock.timers.tick(10_000);
  for (let k = 0; k < 100; k++) {
    s.changed('a');
    t.mock.timers.tick(10);
  }
  const a = out.filter(([u]) => u === 'a').map(([, at]) => at - 10_000);
  assert.deepEqual(a, [0, 10 + PUBLISH_MAX_DELAY_MS, 10 + 2 * PUBLISH_MAX_DELAY_MS, 10 + 3 * PUBLISH_MAX_DELAY_MS]);
  s.changed('b');
  assert.deepEqual(out.at(-1), ['b', Date.now()], 'another document has its own schedule');
  s.changed('b');
  s.closed('b');
  t.mock.timers.tick(10 * PUBLISH_MAX_DELAY_MS);
  assert.equal(out.filter(([u]) => u === 'b').length, 1, 'nothing for a closed document');
});
