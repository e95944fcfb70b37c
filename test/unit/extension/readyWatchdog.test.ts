// The webview ready watchdog: a page that never speaks gets fresh HTML a bounded number of times, then a logged
// give-up; a page that speaks (with `ready` or anything else) is left alone. Timers are node:test's mock clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderUntilReady, type ReadyWebview } from '../../../src/extension/webview/readyWatchdog';

/** A webview as the watchdog sees it: an html property and a message event the test fires. */
function fakeWebview() {
  const listeners = new Set<(m: unknown) => void>();
  const sets: string[] = [];
  const webview: ReadyWebview = {
    set html(v: string) {
      sets.push(v);
    },
    get html() {
      return sets.at(-1) ?? '';
    },
    onDidReceiveMessage: ((fn: (m: unknown) => void) => {
      listeners.add(fn);
      return { dispose: () => listeners.delete(fn) };
    }) as ReadyWebview['onDidReceiveMessage'],
  };
  return { webview, sets, listeners, send: (m: unknown) => listeners.forEach((fn) => fn(m)) };
}

test('a silent page is re-rendered with fresh HTML, at most `retries` times, then given up on', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const w = fakeWebview();
  let n = 0;
  const stalls: [number, boolean][] = [];
  const dog = renderUntilReady(w.webview, () => `page ${++n}`, {
    timeoutMs: 1000,
    retries: 2,
    onStall: (a, g) => stalls.push([a, g]),
  });
  assert.deepEqual(w.sets, ['page 1']);
  t.mock.timers.tick(999);
  assert.deepEqual(w.sets, ['page 1']);
  t.mock.timers.tick(1);
  assert.deepEqual(w.sets, ['page 1', 'page 2']);
  t.mock.timers.tick(1000);
  assert.deepEqual(w.sets, ['page 1', 'page 2', 'page 3']);
  t.mock.timers.tick(5000);
  assert.deepEqual(w.sets, ['page 1', 'page 2', 'page 3'], 'no render past the retry bound');
  assert.deepEqual(stalls, [
    [1, false],
    [2, false],
    [2, true],
  ]);
  dog.dispose();
  assert.equal(w.listeners.size, 0);
});

test('a page that posts ready (or any message) is never re-rendered', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  for (const first of [{ type: 'ready' }, { type: 'query', query: {} }]) {
    const w = fakeWebview();
    const stalls: number[] = [];
    renderUntilReady(w.webview, () => 'page', { timeoutMs: 1000, onStall: (a) => stalls.push(a) });
    t.mock.timers.tick(500);
    w.send(first);
    t.mock.timers.tick(60_000);
    assert.deepEqual(w.sets, ['page']);
    assert.deepEqual(stalls, []);
  }
});

test('a page that speaks after one reload stops the watchdog; disposing a waiting watchdog stops it too', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const w = fakeWebview();
  renderUntilReady(w.webview, () => 'page', { timeoutMs: 1000, retries: 3 });
  t.mock.timers.tick(1000);
  assert.equal(w.sets.length, 2);
  w.send({ type: 'ready' });
  t.mock.timers.tick(10_000);
  assert.equal(w.sets.length, 2);

  const v = fakeWebview();
  const dog = renderUntilReady(v.webview, () => 'page', { timeoutMs: 1000 });
  dog.dispose();
  t.mock.timers.tick(10_000);
  assert.equal(v.sets.length, 1);
});
