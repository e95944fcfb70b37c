// Token overlay mapping (record → ranges + styles + hover), without VS Code.
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  groupByStyle,
  hoverMarkdown,
  spanAt,
  styleOf,
  tokenSpans,
  type TokenSpan,
} from '../../../src/extension/providers/tokens/mapping';

const RESPONSE =
  '<think> a "quote"\n</think> <search> q 😀 </search> <observation> doc </observation> <answer> x </answer>';
// Token starts in code points, as Python's offset_mapping writes them.
function cpOffsets(text: string, pieces: string[]): number[] {
  const cps = Array.from(text);
  const out: number[] = [];
  let from = 0;
  for (const p of pieces) {
    const at = cps.join('').indexOf(p, from); // UTF-16 index
    out.push(Array.from(cps.join('').slice(0, at)).length);
    from = at + p.length;
  }
  return out;
}
const PIECES = [
  '<think>',
  'a',
  '"',
  'quote',
  '"',
  '</think>',
  '<search>',
  'q',
  '😀',
  '</search>',
  '<observation>',
  'doc',
  '</observation>',
  '<answer>',
  'x',
  '</answer>',
];
const MASK = PIECES.map((_, i) => (i >= 10 && i <= 12 ? 0 : 1));
const LOGP = PIECES.map((_, i) => (MASK[i] ? Math.log([0.95, 0.6, 0.2, 0.05, 0.001][i % 5]) : null));
const ADV = PIECES.map((_, i) => (MASK[i] ? (i % 2 ? 0.5 : -0.25) : 0));
const RECORD = {
  id: 'r',
  question: 'q',
  response: RESPONSE,
  tokens: {
    ids: PIECES.map((_, i) => 100 + i),
    loss_mask: MASK,
    logprobs: LOGP,
    advantages: ADV,
    offsets: cpOffsets(RESPONSE, PIECES),
  },
};

test('spans: raw columns cover exactly each token, through JSON escapes and astral characters', () => {
  const line = JSON.stringify(RECORD);
  const r = tokenSpans(line);
  assert.ok(r.spans);
  assert.equal(r.spans.length, PIECES.length);
  for (const [i, s] of r.spans.entries()) {
    assert.equal(s.text, PIECES[i]);
    // The raw slice is the JSON-escaped token text.
    assert.equal(JSON.parse(`"${line.slice(s.start, s.end)}"`), PIECES[i]);
  }
  assert.equal(spanAt(r.spans, r.spans[3].start + 1)?.index, 3);
  assert.equal(r.spans[1].text, 'a');
  assert.equal(spanAt(r.spans, r.spans[1].end), undefined, 'the space after a token is no token');
});

test('styles per view: mask, log-prob heat buckets, advantage sign', () => {
  const { spans } = tokenSpans(JSON.stringify(RECORD)) as { spans: TokenSpan[] };
  assert.deepEqual(
    spans.map((s) => styleOf('mask', s)),
    MASK.map((m) => (m ? 'trained' : 'masked')),
  );
  assert.deepEqual(
    spans.slice(0, 5).map((s) => styleOf('logprob', s)),
    ['lp0', 'lp1', 'lp2', 'lp3', 'lp4'],
  );
  assert.equal(styleOf('logprob', spans[11]), null, 'observation tokens have no log-prob');
  assert.deepEqual(
    spans.slice(0, 3).map((s) => styleOf('advantage', s)),
    ['negative', 'positive', 'negative'],
  );
  assert.equal(styleOf('advantage', spans[11]), 'zero');
  const g = groupByStyle('mask', spans);
  assert.deepEqual(
    g.get('masked')?.map((s) => s.text),
    ['<observation>', 'doc', '</observation>'],
  );
  const h = hoverMarkdown(spans[2]);
  assert.match(h, /token 2/);
  assert.match(h, /\| 102 \| -1\.6094 \(p = 0\.2000\) \| 1 \(trained\) \| -0\.2500 \|/);
  assert.match(hoverMarkdown(spans[11]), /0 \(masked\)/);
});

test('lines without usable tokens say why', () => {
  assert.deepEqual(tokenSpans('{'), { spans: null, reason: 'not valid JSON' });
  assert.deepEqual(tokenSpans(JSON.stringify({ id: 'a', question: 'q', response: 'r' })), {
    spans: null,
    reason: 'no tokens',
  });
  assert.deepEqual(tokenSpans(JSON.stringify({ id: 'a', question: 'q', response: 'r', tokens: { ids: [1] } })), {
    spans: null,
    reason: 'tokens without offsets',
  });
});

test('notebook step cells: each cell gets the tokens of its piece of the response, in cell offsets', async () => {
  const { textToNotebook } = await import('../../../src/extension/providers/notebook/codec');
  const { cellMeta } = await import('../../../src/extension/providers/notebook/cells');
  const { cellTokenSpans } = await import('../../../src/extension/providers/tokens/mapping');
  const line = JSON.stringify(RECORD);
  const nb = textToNotebook(line + '\n');
  const header = cellMeta(nb.cells[0].metadata);
  assert.equal(header?.kind, 'header');
  const raw = header!.kind === 'header' ? header!.raw : '';
  const seen: string[] = [];
  for (const cell of nb.cells.slice(1)) {
    const m = cellMeta(cell.metadata);
    assert.equal(m?.kind, 'step');
    if (m?.kind !== 'step') continue;
    const r = cellTokenSpans(raw, m.start, m.end, cell.value);
    assert.ok(r.spans, `cell ${m.index}: ${'reason' in r ? r.reason : ''}`);
    for (const s of r.spans) {
      assert.equal(cell.value.slice(s.start, s.end), s.text, 'the cell text under a span is the token');
      seen.push(s.text);
    }
  }
  assert.deepEqual(seen, PIECES, 'every token lands in exactly one cell, in order');
  // An edited cell has no overlay (the tokens describe the old text).
  const step = cellMeta(nb.cells[1].metadata)!;
  if (step.kind === 'step')
    assert.deepEqual(cellTokenSpans(raw, step.start, step.end, nb.cells[1].value + 'x'), {
      spans: null,
      reason: 'cell edited',
    });
});
