// The observation text a search returns, per dialect: exactly what goes BETWEEN the dialect's
// observation tags (tags excluded). Layouts follow the training code each dialect comes from, so a
// model trained there sees the same bytes here. Documented in docs/env-server.md.
import type { DialectName } from '../core/dialects';
import { splitContents } from '../core/corpus';

export interface ObservedPassage {
  id: string;
  title: string;
  contents: string;
}

/** Search-R1 `_passages2string`: `Doc i(Title: <first line of contents, quotes kept>) <rest>\n` per passage. */
function searchR1(hits: ObservedPassage[]): string {
  let out = '';
  hits.forEach((h, i) => {
    const { rawTitle, text } = splitContents(h.contents);
    out += `Doc ${i + 1}(Title: ${rawTitle}) ${text}\n`;
  });
  return out;
}

/**
 * AutoCoA `get_search_results`/`topk_format`: one hit → its contents; several → `result i: <contents>`
 * joined by newlines; wrapped in one space each side (AutoCoA writes `<search_result> … </search_result>`).
 */
function autocoa(hits: ObservedPassage[]): string {
  if (hits.length === 0) return ' No results. ';
  if (hits.length === 1) return ` ${hits[0].contents} `;
  return ` ${hits.map((h, i) => `result ${i + 1}: ${h.contents}`).join('\n')} `;
}

/** CoA default: `[i] <title>\n<text>` blocks separated by a blank line, newline-padded inside the tags. */
function coa(hits: ObservedPassage[]): string {
  if (hits.length === 0) return '\nNo results.\n';
  return `\n${hits.map((h, i) => `[${i + 1}] ${h.title}\n${splitContents(h.contents).text}`).join('\n\n')}\n`;
}

/** Hermes/Qwen: `\n{"name":"search","content":[{"id","title","text"}…]}\n` (the chat template's padding). */
function hermes(hits: ObservedPassage[]): string {
  const content = hits.map((h) => ({ id: h.id, title: h.title, text: splitContents(h.contents).text }));
  return `\n${JSON.stringify({ name: 'search', content })}\n`;
}

export function formatObservation(dialect: DialectName, hits: ObservedPassage[]): string {
  switch (dialect) {
    case 'search-r1':
      return searchR1(hits);
    case 'autocoa':
      return autocoa(hits);
    case 'hermes':
      return hermes(hits);
    case 'coa':
      return coa(hits);
  }
}

/**
 * The words an observation layout itself writes, whatever the passages say (`Doc`, `Title`, `No results`, Hermes'
 * JSON keys …), read off empty and one-passage observations of every dialect. The embedded tokenizer's vocabulary
 * includes them (generated into schemas/dialects.json), so a real observation never hits <unk> on its frame.
 */
export function layoutWords(dialects: readonly DialectName[]): string[] {
  const words = new Set<string>();
  const empty: ObservedPassage = { id: '', title: '', contents: '' };
  for (const d of dialects) {
    for (const hits of [[], [empty], [empty, empty]]) {
      for (const w of formatObservation(d, hits)
        .toLowerCase()
        .match(/[a-z]+/g) ?? [])
        words.add(w);
    }
  }
  return [...words].sort();
}
