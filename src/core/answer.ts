// Answer matching as in SQuAD / Search-R1 (qa_em.py): normalise, then exact match, cover match or token F1,
// taking the best over the golden answers.

// Python's string.punctuation, which the reference normalisation strips.
const PUNCTUATION = new Set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~');

/** Lower-case, strip punctuation, drop the articles a/an/the, squeeze whitespace. */
export function normalizeAnswer(s: string): string {
  let lower = '';
  for (const ch of s.toLowerCase()) if (!PUNCTUATION.has(ch)) lower += ch;
  return (
    lower
      // Python's \b is Unicode-aware; JavaScript's is ASCII-only, so spell the boundary out.
      .replace(/(?<![\p{L}\p{N}\p{M}_])(a|an|the)(?![\p{L}\p{N}\p{M}_])/gu, ' ')
      .split(/\s+/)
      .filter(Boolean)
      .join(' ')
  );
}

export function exactMatch(prediction: string | null, golden: readonly string[]): number {
  if (prediction === null) return 0;
  const p = normalizeAnswer(prediction);
  return golden.some((g) => normalizeAnswer(g) === p) ? 1 : 0;
}

/** Search-R1's sub-EM: a normalised golden answer occurs inside the normalised prediction. */
export function coverExactMatch(prediction: string | null, golden: readonly string[]): number {
  if (prediction === null) return 0;
  const p = normalizeAnswer(prediction);
  return golden.some((g) => {
    const n = normalizeAnswer(g);
    return n !== '' && p.includes(n);
  })
    ? 1
    : 0;
}

/** SQuAD token F1, best over golden answers. */
export function f1Score(prediction: string | null, golden: readonly string[]): number {
  if (prediction === null) return 0;
  const pred = normalizeAnswer(prediction).split(' ').filter(Boolean);
  let best = 0;
  for (const g of golden) {
    const gold = normalizeAnswer(g).split(' ').filter(Boolean);
    if (pred.length === 0 || gold.length === 0) {
      best = Math.max(best, pred.length === gold.length ? 1 : 0);
      continue;
    }
    const counts = new Map<string, number>();
    for (const t of gold) counts.set(t, (counts.get(t) ?? 0) + 1);
    let common = 0;
    for (const t of pred) {
      const c = counts.get(t) ?? 0;
      if (c > 0) {
        common++;
        counts.set(t, c - 1);
      }
    }
    if (common === 0) continue;
    const precision = common / pred.length;
    const recall = common / gold.length;
    best = Math.max(best, (2 * precision * recall) / (precision + recall));
  }
  return best;
}
