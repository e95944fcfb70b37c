// The reward renderer in headless Chromium: bundled exactly like scripts/build.mjs (ESM), loaded as a module in a
// page with a nonce-only CSP like VS Code's notebook webview, and called with the real outputs the serializer
// makes for examples/trajectories.coa.jsonl. Pages are served through Playwright routing: no port is opened.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { textToNotebook } from '../../src/extension/providers/notebook/codec';
import { REWARD_MIME, RewardOutput } from '../../src/extension/providers/notebook/cells';
import { launchChromium } from './chromium';

const ROOT = join(__dirname, '../..');
const OUT = join(ROOT, '.cache/webview-test/notebook-renderer');
const ORIGIN = 'http://renderer.test';

const THEME = `--vscode-foreground: rgb(204, 204, 204); --vscode-font-family: sans-serif; --vscode-descriptionForeground: rgb(157, 157, 157);
  --vscode-testing-iconPassed: rgb(1, 160, 2); --vscode-errorForeground: rgb(240, 3, 4); --vscode-editorWidget-border: rgb(50, 50, 50);`;

const rewardsOf = (text: string, scheme: 'otc-grpo' | 'em') =>
  textToNotebook(text, { scheme }).cells.flatMap((c) =>
    (c.outputs ?? []).flatMap((o) => o.filter((i) => i.mime === REWARD_MIME).map((i) => i.data as RewardOutput)),
  );

function outputs(): RewardOutput[] {
  // The example file, plus a record without golden answers and one whose run stored an autocoa reward.
  const extra = [
    { id: 'no-golden', question: 'q', response: '<think>t</think><answer>x</answer>' },
    {
      id: 'stored',
      question: 'q',
      golden_answers: ['y'],
      response: '<think>t</think><answer>x</answer>',
      reward: {
        scheme: 'autocoa',
        em: 0,
        f1: 0,
        format_ok: true,
        violations: [],
        tool_calls: 0,
        optimal_tool_calls: null,
        r_tool: 1,
        r_correct: 0,
        total: 0,
      },
    },
  ];
  return [
    ...rewardsOf(readFileSync(join(ROOT, 'examples/trajectories.coa.jsonl'), 'utf8'), 'otc-grpo'),
    ...rewardsOf(extra.map((r) => JSON.stringify(r)).join('\n'), 'em'),
  ];
}

test('reward renderer draws every breakdown of a real file with theme colours and no console error', {
  timeout: 60_000,
}, async () => {
  mkdirSync(OUT, { recursive: true });
  await build({
    entryPoints: [join(ROOT, 'webview/notebook-renderer/index.ts')],
    outfile: join(OUT, 'notebook-renderer.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'warning',
  });
  const data = outputs();
  assert.ok(data.length >= 10);
  const nonce = 'n0nce';
  const html = `<!DOCTYPE html><html style="${THEME}"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-${nonce}' ${ORIGIN}; style-src 'unsafe-inline'">
</head><body><div id="outputs"></div>
<script type="module" nonce="${nonce}">
import { activate } from './notebook-renderer.js';
const renderer = activate({});
const data = JSON.parse(document.getElementById('data').textContent);
for (const [k, d] of data.entries()) {
  const el = document.createElement('div');
  el.className = 'output';
  document.getElementById('outputs').appendChild(el);
  renderer.renderOutputItem({ id: 'o' + k, mime: '${REWARD_MIME}', json: () => d }, el);
}
window.__done = true;
</script><script id="data" type="application/json">${JSON.stringify(data).replace(/</g, '\\u003c')}</script></body></html>`;

  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('pageerror', (e) => problems.push(e.message));
    await page.route(`${ORIGIN}/**`, (route) => {
      const url = new URL(route.request().url());
      if (url.pathname === '/') return route.fulfill({ contentType: 'text/html', body: html });
      if (url.pathname === '/notebook-renderer.js')
        return route.fulfill({ contentType: 'text/javascript', body: readFileSync(join(OUT, 'notebook-renderer.js')) });
      return route.fulfill({ status: 404, body: '' });
    });
    await page.goto(`${ORIGIN}/`);
    await page.waitForFunction(() => (window as unknown as { __done?: boolean }).__done === true);

    const drawn = await page.$$eval('.output', (els) =>
      els.map((el) => ({
        total: el.querySelector('.coa-total')?.textContent ?? '',
        colour: getComputedStyle(el.querySelector('.coa-total')!).color,
        format: el.querySelector('.coa-format td')?.textContent ?? '',
        tools: el.querySelector('.coa-tools td')?.textContent ?? '',
        answer: el.querySelector('.coa-answer td')?.textContent ?? '',
        text: (el as HTMLElement).innerText,
        rows: el.querySelectorAll('tr').length,
      })),
    );
    assert.equal(drawn.length, data.length);
    drawn.forEach((d, k) => {
      const b = data[k].breakdown;
      assert.equal(d.total, `reward ${Math.round(b.total * 10000) / 10000}`);
      // Theme colours: green from --vscode-testing-iconPassed for a reward, red from --vscode-errorForeground.
      // Without golden answers a 0 measures nothing: dim, not red, and said in words.
      assert.equal(
        d.colour,
        data[k].golden.length === 0 ? 'rgb(157, 157, 157)' : b.total > 0 ? 'rgb(1, 160, 2)' : 'rgb(240, 3, 4)',
      );
      if (data[k].golden.length === 0) assert.match(d.text, /no golden answers/);
      assert.equal(d.format, b.format_ok ? 'ok' : `errors: ${b.violations.join(', ')}`);
      assert.match(d.tools, new RegExp(`^m = ${b.tool_calls}`));
      assert.equal(d.answer, data[k].answer ?? '— (none)');
      assert.ok(d.rows >= 7);
    });
    assert.ok(
      drawn.some((d) => d.colour === 'rgb(1, 160, 2)') && drawn.some((d) => d.colour === 'rgb(240, 3, 4)'),
      'the example mixes rewarded and failed trajectories',
    );
    assert.ok(
      drawn.some((d) => /optimal n = \d/.test(d.tools)),
      'OTC-GRPO shows the optimal tool-call count',
    );
    // The stored autocoa reward is shown next to its recomputation (same scheme: no "differs"), em offered.
    const stored = drawn[data.findIndex((o) => o.id === 'stored')].text;
    assert.match(stored, /stored by its run\s+0 \(autocoa\) — recomputed the same/);
    assert.match(stored, /recomputed with em\s+0/);
    assert.doesNotMatch(stored, /differs/);
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
  }
});
