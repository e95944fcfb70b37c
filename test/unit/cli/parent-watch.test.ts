// `coa env serve --parent-pid` stops about a second after a SIGKILLed parent, as the docs say (a 1 s poll followed by
// two idle checks 2 s apart measured 4–5.6 s). The policy on node:test's mock clock (no waiting): an unused
// server stops at the first poll after its parent is gone; one still used by a connected client (a stage finishing
// its step) waits for that client's quiet; never longer than MAX_WAIT_MS. The real figure is bench/reliability's;
// test/unit/cli/reliability.test.ts kills a real parent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MAX_WAIT_MS,
  mayStop,
  PARENT_POLL_MS,
  QUIET_MS,
  watchParent,
  whenIdle,
  type ServerActivity,
} from '../../../src/cli/parentWatch';

test('mayStop: nothing in flight and no client connected, or a connected client quiet for QUIET_MS, or the cap', () => {
  const now = 100_000;
  const goneAt = now - 10;
  assert.equal(mayStop({ inFlight: 0, connections: 0, lastRequestAt: now - 1 }, now, goneAt), true, 'unused: at once');
  assert.equal(
    mayStop({ inFlight: 1, connections: 0, lastRequestAt: now - 5_000 }, now, goneAt),
    false,
    'a request still running',
  );
  assert.equal(
    mayStop({ inFlight: 0, connections: 1, lastRequestAt: now - 100 }, now, goneAt),
    false,
    'a connected client just called',
  );
  assert.equal(
    mayStop({ inFlight: 0, connections: 1, lastRequestAt: now - QUIET_MS }, now, goneAt),
    true,
    'a connected client gone quiet',
  );
  assert.equal(
    mayStop({ inFlight: 3, connections: 5, lastRequestAt: now }, now, now - MAX_WAIT_MS),
    true,
    'never past the cap',
  );
});

test('the parent is polled every PARENT_POLL_MS; an unused server stops at the first poll after its death', (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'Date'] });
  let parentAlive = true;
  let gone = 0;
  const stop = watchParent(
    4242,
    () => gone++,
    () => parentAlive,
  );
  t.after(stop);
  t.mock.timers.tick(5 * PARENT_POLL_MS);
  assert.equal(gone, 0);
  parentAlive = false;
  t.mock.timers.tick(PARENT_POLL_MS);
  assert.equal(gone, 1, `noticed within ${PARENT_POLL_MS} ms`);
  t.mock.timers.tick(10 * PARENT_POLL_MS);
  assert.equal(gone, 1, 'once');
});

test('whenIdle: at once when unused; with a connected client, once it has been quiet for QUIET_MS', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'Date'] });
  const unused: ServerActivity = { inFlight: 0, connections: 0, lastRequestAt: Date.now() };
  await whenIdle(() => unused); // resolved by its first check, before any time passes

  const a: ServerActivity = { inFlight: 1, connections: 1, lastRequestAt: Date.now() };
  let stopped = false;
  void whenIdle(() => a).then(() => (stopped = true));
  const settle = () => new Promise<void>((r) => setImmediate(r));
  t.mock.timers.tick(10 * PARENT_POLL_MS);
  await settle();
  assert.equal(stopped, false, 'a request in flight keeps it');
  a.inFlight = 0;
  a.lastRequestAt = Date.now();
  t.mock.timers.tick(QUIET_MS - PARENT_POLL_MS);
  await settle();
  assert.equal(stopped, false, 'its client may call again');
  t.mock.timers.tick(PARENT_POLL_MS);
  await settle();
  assert.equal(stopped, true, 'quiet for QUIET_MS');
});
