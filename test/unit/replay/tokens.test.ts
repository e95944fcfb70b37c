// Token overlay mapping (record → ranges + styles + hover), without VS Code.
import test from 'node:test';
import assert from 'node:assert/strict';
import { groupByStyle, hoverMarkdown, spanAt, styleOf, tokenSpans, type TokenSpan } from '../../../src/extension/providers/tokens/mapping';

const RESPONSE = '<think> a "quote"\n</think> <search> q 😀 </search> <observation> doc </observation> <answer> x </answer>';
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
const PIECES = ['<think>', 'a', '"', 'quote', '"', '</think>', '<search>', 'q', '😀', '</search>', '<observation>', 'doc', '</observation>', '<answer>', 'x', '</answer>'];
const MASK = PIECES.map((_, i) => (i >= 10 && i <= 12 ? 0 : 1));
const LOGP = PIECES.map((_, i) => (MASK[i] ? Math.log([0.95, 0.6, 0.2, 0.05, 0.001][i % 5]) : null));
const ADV = PIECES.map((_, i) => (MASK[i] ? (i % 2 ? 0.5 : -0.25) : 0));
const RECORD = { id: 'r', question: 'q', response: RESPONSE, tokens: { ids: PIECES.map((_, i) => 100 + i), loss_mask: MASK, logprobs: LOGP, advantages: ADV, offsets: cpOffsets(RESPONSE, PIECES) } };

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
  assert.deepEqual(spans.map((s) => styleOf('mask', s)), MASK.map((m) => (m ? 'trained' : 'masked')));
  assert.deepEqual(spans.slice(0, 5).map((s) => styleOf('logprob', s)), ['lp0', 'lp1', 'lp2', 'lp3', 'lp4']);
  assert.equal(styleOf('logprob', spans[11]), null, 'observation tokens have no log-prob');
  assert.deepEqual(spans.slice(0, 3).map((s) => styleOf('advantage', s)), ['negative', 'positive', 'negative']);
  assert.equal(styleOf('advantage', spans[11]), 'zero');
  const g = groupByStyle('mask', spans);
  assert.deepEqual(g.get('masked')?.map((s) => s.text), ['<observation>', 'doc', '</observation>']);
  const h = hoverMarkdown(spans[2]);
  assert.match(h, /token 2/);
  assert.match(h, /\| 102 \| -1\.6094 \(p = 0\.2000\) \| 1 \(trained\) \| -0\.2500 \|/);
  assert.match(hoverMarkdown(spans[11]), /0 \(masked\)/);
});

test('lines without usable tokens say why', () => {
  assert.deepEqual(tokenSpans('{'), { spans: null, reason: 'not valid JSON' });
  assert.deepEqual(tokenSpans(JSON.stringify({ id: 'a', question: 'q', response: 'r' })), { spans: null, reason: 'no tokens' });
  assert.deepEqual(tokenSpans(JSON.stringify({ id: 'a', question: 'q', response: 'r', tokens: { ids: [1] } })), { spans: null, reason: 'tokens without offsets' });
});
