// The BM25 index itself (no HTTP): scores against a textbook oracle, ranks on known answers,
// tokenisation, streaming corpus reading with bad lines, persistence and rebuild-on-change.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, writeFileSync, utimesSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Retriever } from '../../../src/env/retriever';
import { readCorpus, type BadLine } from '../../../src/core/corpus';
import { tokenize } from '../../../src/env/tokenize';
import { readIndexHeader } from '../../../src/env/index-file';
import { tempDir, writeKnownCorpus, writeSkewedCorpus, referenceBm25, referenceScorer } from './helpers';
import { makeRandom } from '../../../src/env/random';

test('tokenizer: lower-case, letters/digits, diacritics folded, stopwords dropped', () => {
  assert.deepEqual(tokenize('The Beyoncé album, "4" (2011) — is Ｆｕｌｌ-width'), [
    'beyonce',
    'album',
    '4',
    '2011',
    'full',
    'width',
  ]);
  assert.deepEqual(tokenize('Москва и Київ'), ['москва', 'и', 'киів']);
  assert.deepEqual(tokenize('of the and'), []);
});

test('scores equal a textbook Lucene BM25 on every passage', async (t) => {
  const dir = tempDir(t);
  const { file } = writeKnownCorpus(dir, 300);
  const docs = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l).contents as string);
  const r = await Retriever.open(file, { indexDir: join(dir, 'idx') });
  t.after(() => r.close());
  for (const query of ['river king', 'Entity 17 zq5x', 'church church island', 'music album film school']) {
    const want = referenceBm25(docs, query);
    const order = want
      .map((s, i) => ({ s, i }))
      .filter((x) => x.s > 0)
      .sort((a, b) => b.s - a.s || a.i - b.i);
    const got = r.search(query, 10);
    assert.equal(got.length, Math.min(10, order.length), query);
    got.forEach((hit, rank) => {
      // Every returned score matches the oracle for that passage, and no better passage was missed.
      const doc = Number(hit.id.slice(1));
      assert.ok(
        Math.abs(hit.score - want[doc]) < 1e-5 * Math.max(1, want[doc]),
        `${query}: ${hit.id} ${hit.score} vs ${want[doc]}`,
      );
      assert.ok(Math.abs(hit.score - order[rank].s) < 1e-5 * Math.max(1, order[rank].s), `${query}: rank ${rank}`);
    });
  }
});

test('known answers: the passage holding a unique word ranks first, with its title', async (t) => {
  const dir = tempDir(t);
  const { file, facts } = writeKnownCorpus(dir, 2000);
  const r = await Retriever.open(file, { indexDir: join(dir, 'idx') });
  t.after(() => r.close());
  for (const f of facts.filter((_, i) => i % 37 === 0)) {
    const hits = r.search(`river ${f.word} city`, 3);
    assert.equal(hits[0].id, f.id);
    assert.equal(hits[0].title, f.title);
    assert.ok(hits[0].score > hits[1].score);
  }
  // Two unique words: both passages come first, in a deterministic order.
  const two = r.search(`${facts[5].word} ${facts[1500].word}`, 2).map((h) => h.id);
  assert.deepEqual([...two].sort(), ['p1500', 'p5']);
  assert.deepEqual(r.search('nothingmatcheshere', 3), []);
  assert.deepEqual(r.search('the of and', 3), []);
});

test('streaming reader reports bad lines with line numbers and keeps going', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'c.jsonl');
  writeFileSync(
    file,
    [
      '{"id": "a", "contents": "\\"A\\"\\nalpha words"}',
      '{"id": "b", "contents": ',
      '',
      '{"id": 3, "contents": "\\"C\\"\\ngamma"}',
      '["not", "an", "object"]',
      '{"id": "d"}',
      '{"id": "e", "contents": "\\"E\\"\\nepsilon"}\r',
      '{"id": "f", "contents": "\\"F\\"\\nno newline at end"}',
    ].join('\n'),
  );
  const bad: BadLine[] = [];
  const ids: string[] = [];
  for await (const row of readCorpus(file, (b) => bad.push(b))) ids.push(`${row.passage.id}@${row.line}`);
  assert.deepEqual(ids, ['a@1', '3@4', 'e@7', 'f@8']);
  assert.deepEqual(
    bad.map((b) => b.line),
    [2, 5, 6],
  );
  assert.match(bad[0].message, /invalid JSON/);
  assert.match(bad[2].message, /contents/);
  const r = await Retriever.open(file, { indexDir: join(dir, 'idx') });
  t.after(() => r.close());
  assert.equal(r.passages, 4);
  assert.equal(r.search('epsilon', 1)[0].id, 'e');
  assert.equal(r.search('newline', 1)[0].contents, '"F"\nno newline at end');
  assert.equal(readIndexHeader(join(dir, 'idx'))?.bad_lines, 3);
});

test('the saved index is reused, and a changed corpus forces a rebuild', async (t) => {
  const dir = tempDir(t);
  const { file } = writeKnownCorpus(dir, 500);
  const idx = join(dir, 'idx');
  const first = await Retriever.open(file, { indexDir: idx });
  assert.equal(first.info.source, 'built');
  const before = first.search('river zq9x', 3);
  first.close();

  const again = await Retriever.open(file, { indexDir: idx });
  assert.equal(again.info.source, 'loaded');
  assert.deepEqual(again.search('river zq9x', 3), before);
  again.close();

  appendFileSync(file, JSON.stringify({ id: 'new', contents: '"Newcomer"\nunseenword appears here' }) + '\n');
  const changed = await Retriever.open(file, { indexDir: idx });
  assert.equal(changed.info.source, 'built');
  assert.equal(changed.info.reason, 'corpus changed');
  assert.equal(changed.passages, 501);
  assert.equal(changed.search('unseenword', 1)[0].id, 'new');
  changed.close();

  // Same size, same mtime, different bytes (an in-place edit): the content hash still catches it.
  const st = statSync(file);
  const text = readFileSync(file, 'utf8');
  writeFileSync(file, text.replace('unseenword', 'otherwords'));
  utimesSync(file, st.atime, st.mtime);
  const edited = await Retriever.open(file, { indexDir: idx });
  assert.equal(edited.info.source, 'built');
  assert.equal(edited.search('otherwords', 1)[0].id, 'new');
  edited.close();

  // k1/b are part of the index identity too.
  const k1 = await Retriever.open(file, { indexDir: idx, k1: 1.2 });
  assert.equal(k1.info.reason, 'k1/b changed');
  k1.close();
});

test('a damaged index file is rebuilt, not trusted', async (t) => {
  const dir = tempDir(t);
  const { file } = writeKnownCorpus(dir, 50);
  const idx = join(dir, 'idx');
  (await Retriever.open(file, { indexDir: idx })).close();
  const path = join(idx, 'bm25.idx');
  const bytes = readFileSync(path);
  writeFileSync(path, bytes.subarray(0, bytes.length - 100));
  const r = await Retriever.open(file, { indexDir: idx });
  t.after(() => r.close());
  assert.equal(r.info.source, 'built');
  assert.match(r.info.reason ?? '', /unreadable/);
});

test("lines spanning the reader's 1 MiB chunks keep exact byte offsets (multi-byte text too)", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'big.jsonl');
  const lines: string[] = [];
  for (let i = 0; i < 8000; i++)
    lines.push(
      JSON.stringify({ id: `d${i}`, contents: `"Tïtle ${i}"\n${'naïve café Ωmega '.repeat(3 + (i % 40))}w${i}` }),
    );
  writeFileSync(file, lines.join('\n') + '\n');
  const bytes = readFileSync(file);
  assert.ok(bytes.length > 3 * (1 << 20), `${bytes.length} bytes`);
  let n = 0;
  for await (const row of readCorpus(file, () => assert.fail('no bad lines expected'))) {
    const slice = bytes.subarray(row.offset, row.offset + row.length).toString('utf8');
    assert.equal(JSON.parse(slice).id, row.passage.id);
    n++;
  }
  assert.equal(n, 8000);
  const r = await Retriever.open(file, { indexDir: join(dir, 'idx') });
  t.after(() => r.close());
  assert.equal(r.search('w7999 omega', 1)[0].id, 'd7999');
  assert.equal(r.search('W2500', 1)[0].title, 'Tïtle 2500');
});

test('early termination returns exactly the exhaustive top k (ids, order, scores)', async (t) => {
  const dir = tempDir(t);
  const { file, word } = writeSkewedCorpus(dir, 1500);
  const docs = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l).contents as string);
  const fresh = await Retriever.open(file, { indexDir: join(dir, 'idx') }); // bounds computed at build
  const loaded = await Retriever.open(file, { indexDir: join(dir, 'idx') }); // bounds read from disk
  t.after(() => (fresh.close(), loaded.close()));
  assert.equal(loaded.info.source, 'loaded');
  const oracle = referenceScorer(docs);
  const rnd = makeRandom(99);
  let checked = 0;
  for (let n = 0; n < 80; n++) {
    // Mixed queries: skewed draws (common words) plus uniform draws (often rare words).
    const parts = Array.from({ length: 1 + (n % 5) }, (_, j) => (j % 2 ? word(rnd) : `w${Math.floor(400 * rnd())}`));
    const query = parts.join(' ');
    const want = oracle(query)
      .map((s, i) => ({ s, i }))
      .filter((x) => x.s > 0)
      .sort((a, b) => b.s - a.s || a.i - b.i);
    for (const k of [1, 3, 10]) {
      for (const r of [fresh, loaded]) {
        const got = r.search(query, k);
        assert.equal(got.length, Math.min(k, want.length));
        got.forEach((h, i) => {
          assert.ok(
            Math.abs(h.score - want[i].s) < 1e-5 * want[i].s,
            `${query} k=${k} rank ${i}: ${h.score} vs ${want[i].s}`,
          );
          // Same passage unless the oracle has a float-level tie at this rank.
          const tie =
            Math.abs(want[i].s - (want[i + 1]?.s ?? -1)) < 1e-6 || Math.abs(want[i].s - (want[i - 1]?.s ?? -1)) < 1e-6;
          if (!tie) assert.equal(h.id, `p${want[i].i}`, `${query} k=${k} rank ${i}`);
        });
        checked++;
      }
    }
  }
  assert.equal(checked, 480);
});

test('an index of an older format (2: uncompressed postings) is rebuilt, with the reason', async (t) => {
  const dir = tempDir(t);
  const { file } = writeKnownCorpus(dir, 60);
  const idx = join(dir, 'idx');
  (await Retriever.open(file, { indexDir: idx })).close();
  const path = join(idx, 'bm25.idx');
  const bytes = readFileSync(path);
  const at = bytes.indexOf('"format":3');
  assert.ok(at > 0);
  bytes.write('"format":2', at, 'latin1');
  writeFileSync(path, bytes);
  const r = await Retriever.open(file, { indexDir: idx });
  t.after(() => r.close());
  assert.equal(r.info.source, 'built');
  assert.equal(r.info.reason, 'index format 2 (current: 3)');
  assert.equal(readIndexHeader(idx)?.format, 3);
  assert.equal(r.search('zq5x', 1)[0].id, 'p5');
});
