// The replay engine against PyTorch on a tiny model exported by `coa_trainer export-onnx`: tokenizer ids,
// offsets and decoding identical to the Python tokenizer; logits within 1e-4 (full prefill and token by token
// through the KV cache); greedy tokens identical; the agent loop with the real env server and simulated.
import test from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OnnxModel, lastRow } from '../../../src/replay/model';
import { generate, CancelledError } from '../../../src/replay/generate';
import { replayQuestion, replayRecord } from '../../../src/replay/agent';
import { Tokenizer, TokenizerError } from '../../../src/replay/tokenizer';
import { startEnvServer } from '../../../src/env/server';
import { EnvClient } from '../../../src/env/client';
import { RecordSchema } from '../../../src/core/record';
import { checkFormat } from '../../../src/core/rules';
import { tinyModel } from './fixture';
import { EXAMPLE_CORPUS, tempDir } from '../env/helpers';

const QUESTION = 'who wrote the book of sand ?';

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Offsets of decodeWithOffsets: non-decreasing, inside the text; where a token decodes to text of its own, there. */
async function checkDecodeOffsets(tok: Tokenizer, ids: number[], label: string): Promise<void> {
  const d = await tok.decodeWithOffsets(ids);
  assert.equal(d.text, await tok.decode(ids), label);
  const chars = [...d.text];
  assert.equal(d.offsets.length, ids.length, label);
  for (const [i, at] of d.offsets.entries()) {
    assert.ok(at >= (d.offsets[i - 1] ?? 0) && at <= chars.length, `${label}: offset ${i}`);
    const own = await tok.decode([ids[i]]);
    if (own && !own.includes('\uFFFD'))
      assert.ok(chars.slice(at).join('').startsWith(own), `${label}: token ${i} ${JSON.stringify(own)} at ${at}`);
  }
}

test('tokenizer: ids, offsets and decode identical to the Python tokenizer (WordLevel, byte-level BPE, Unigram)', async (t) => {
  const { dir, ref } = tinyModel();
  const cases: [string, { text: string; ids: number[]; offsets?: number[]; decoded: string }[]][] = [
    ['onnx/tokenizer.json', ref.probes],
    ['alt_tokenizer.json', ref.alt],
    ['bpe_gpt2.json', ref.bpe.gpt2],
    ['bpe_qwen2.json', ref.bpe.qwen2],
    ['unigram.json', ref.unigram],
    ['realistic/onnx/tokenizer.json', ref.realistic.probes],
  ];
  for (const [file, probes] of cases) {
    const tok = Tokenizer.fromFile(join(dir, file));
    for (const p of probes) {
      const label = `${file}: ${JSON.stringify(p.text)}`;
      const enc = await tok.encode(p.text);
      assert.deepEqual(enc.ids, p.ids, label);
      if (p.offsets) assert.deepEqual(enc.offsets, p.offsets, label);
      assert.equal(await tok.decode(p.ids), p.decoded, label);
      await checkDecodeOffsets(tok, p.ids, label);
    }
  }
  // The embedded default's word-level decoder joins tokens with spaces: each token's offset is its own text's.
  const tok = Tokenizer.fromFile(join(dir, 'onnx/tokenizer.json'));
  const d = await tok.decodeWithOffsets(ref.probes[1].ids);
  for (const [i, id] of ref.probes[1].ids.entries())
    assert.equal(d.text.slice(d.offsets[i]).startsWith(tok.idToTokenText(id)!), true);
  // Byte-level BPE: the bytes of one character are several tokens, all at that character's start.
  const bpe = Tokenizer.fromFile(join(dir, 'realistic/onnx/tokenizer.json'));
  const emoji = await bpe.encode('a \u{1F600}b');
  const eo = await bpe.decodeWithOffsets(emoji.ids);
  assert.equal(eo.text, 'a \u{1F600}b');
  assert.ok(emoji.ids.length >= 5, 'the emoji is split into byte tokens');
  assert.deepEqual(eo.offsets.slice(-2), [2, 3]);
  await assert.rejects(
    tok.decode([1e9]),
    (e: unknown) =>
      e instanceof TokenizerError && /onnx\/tokenizer\.json: token id 1000000000 is outside/.test(e.message),
  );
  const bad = join(tempDir(t), 'tokenizer.json');
  writeFileSync(bad, '{"model": {"type": "Nope"}}');
  assert.throws(
    () => Tokenizer.fromFile(bad),
    (e: unknown) => e instanceof TokenizerError && e.message.startsWith(`${bad}: `),
  );
});

test('logits match PyTorch (max |Δ| ≤ 1e-4) with and without the KV cache; greedy tokens identical', async () => {
  const { onnx, ref } = tinyModel();
  const model = await OnnxModel.load(onnx);
  try {
    const vocab = ref.prompt_logits[0].length;
    const full = await model.decoder().feed(ref.prompt_ids);
    assert.equal(full.vocab, vocab);
    const worstFull = maxAbsDiff(full.logits, ref.prompt_logits.flat());
    const dec = model.decoder();
    let worstCached = 0;
    for (const [i, id] of ref.prompt_ids.entries())
      worstCached = Math.max(worstCached, maxAbsDiff(lastRow(await dec.feed([id])), ref.prompt_logits[i]));
    console.log(
      `replay logits max |Δ| vs PyTorch: prefill ${worstFull.toExponential(2)}, cached ${worstCached.toExponential(2)}`,
    );
    assert.ok(worstFull <= 1e-4, `prefill max |Δ| ${worstFull}`);
    assert.ok(worstCached <= 1e-4, `cached max |Δ| ${worstCached}`);

    const g = await generate(model.decoder(), ref.prompt_ids, {
      maxNewTokens: ref.greedy_ids.length,
      stopIds: new Set([model.info.eos_id!]),
    });
    assert.deepEqual(g.ids, ref.greedy_ids);
    assert.equal(await model.tokenizer.decode(g.ids), ref.greedy_text);
    assert.ok(g.logprobs.every((x) => x <= 0));

    const ctl = new AbortController();
    ctl.abort();
    await assert.rejects(
      generate(model.decoder(), ref.prompt_ids, { maxNewTokens: 5, stopIds: new Set(), signal: ctl.signal }),
      CancelledError,
    );
  } finally {
    await model.release();
  }
});

test('agent loop against the env server: action → observation (mask 0) → answer; a valid record', async (t) => {
  const { onnx } = tinyModel();
  const model = await OnnxModel.load(onnx);
  t.after(() => model.release());
  const server = await startEnvServer({ corpus: EXAMPLE_CORPUS, indexDir: join(tempDir(t), 'idx') });
  t.after(() => server.close());
  const client = new EnvClient({ url: server.url, token: server.token });
  const queries: string[] = [];
  const tool = async (q: string) => {
    queries.push(q);
    return (await client.search({ queries: [q], top_k: 1, dialect: 'coa' })).observations[0];
  };
  const seen: string[] = [];
  const r = await replayQuestion(model, QUESTION, { mode: 'env', tool, onStep: (s) => void seen.push(s.kind) });
  assert.deepEqual(queries, ['book of sand author']);
  assert.deepEqual(seen, ['model', 'observation', 'model']);
  assert.equal(r.toolCalls, 1);
  assert.equal(r.finished, true);
  const obs = r.steps[1];
  const expected = (await model.tokenizer.encode(`<observation>${await tool('book of sand author')}</observation>`))
    .ids;
  assert.deepEqual(obs.ids, expected);
  assert.deepEqual(
    r.lossMask,
    r.steps.flatMap((s) => s.ids.map(() => (s.kind === 'model' ? 1 : 0))),
  );
  assert.ok(r.logprobs.every((x, i) => (r.lossMask[i] === 0) === (x === null)));
  assert.match(r.steps[2].text, /<answer> borges <\/answer>$/);
  const rec = replayRecord({ id: 'q1', question: QUESTION, golden_answers: ['borges'] }, r, model, {
    mode: 'env',
    checkpoint: onnx,
  });
  assert.equal(RecordSchema.safeParse(rec).success, true);
  for (const [i, id] of rec.tokens!.ids.entries())
    assert.ok(rec.response.slice(rec.tokens!.offsets![i]).startsWith(model.tokenizer.idToTokenText(id)!));
  // The example corpus has no passage on the book of sand ("No results."), and the tiny model goes on with what it
  // memorised: `<answer> borges ) … </observation> <answer> borges </answer>`. An answer opened again before its
  // close is a format error (COA017; the second </answer> does not close the first) and so
  // is the second answer.
  assert.deepEqual(
    checkFormat(rec.response, { dialect: 'coa' })
      .diagnostics.filter((d) => d.severity === 'error')
      .map((d) => d.code),
    ['COA017', 'COA007'],
  );
});

test('simulated environment: the model writes its own observation, masked; sampling is seeded', async (t) => {
  const { onnx } = tinyModel();
  const model = await OnnxModel.load(onnx);
  t.after(() => model.release());
  const r = await replayQuestion(model, QUESTION, { mode: 'simulated' });
  assert.deepEqual(
    r.steps.map((s) => s.kind),
    ['model', 'observation', 'model'],
  );
  assert.equal(r.steps[1].simulated, true);
  assert.match(r.steps[1].text, /^<observation> doc 1 .*<\/observation>$/);
  assert.ok(r.steps[1].ids.length > 3);
  assert.ok(r.lossMask.slice(r.steps[1].first, r.steps[1].first + r.steps[1].ids.length).every((m) => m === 0));
  const a = await replayQuestion(model, QUESTION, { mode: 'simulated', temperature: 1.5, seed: 3, maxNewTokens: 12 });
  const b = await replayQuestion(model, QUESTION, { mode: 'simulated', temperature: 1.5, seed: 3, maxNewTokens: 12 });
  assert.deepEqual(a.ids, b.ids);
});

test('byte-level BPE checkpoint with text tags (the realistic tiny model): stops on tag strings, query, observation, record', async (t) => {
  const { dir, ref } = tinyModel();
  const onnx = join(dir, 'realistic/onnx/model.onnx');
  const model = await OnnxModel.load(onnx);
  t.after(() => model.release());
  assert.equal(model.tokenizer.tokenToId('</search>'), undefined, 'tags are text for this tokenizer');
  const question = 'who wrote the book of sand ?';
  const promptTemplate = ref.realistic.prompt.replace(question, '{question}');
  // The environment answers with the observation the model memorised (the env server's path is tested above).
  const queries: string[] = [];
  const tool = async (q: string) => {
    queries.push(q);
    return ref.realistic.observation;
  };
  const r = await replayQuestion(model, question, { mode: 'env', tool, promptTemplate });
  assert.deepEqual(queries, ['book of sand author']);
  assert.deepEqual(
    r.steps.map((s) => [s.kind, s.stop]),
    [
      ['model', 'action'],
      ['observation', 'observation'],
      ['model', 'answer'],
    ],
  );
  // The turn stopped on the token that completed `</search>`, merged with the newlines after it (`>\n\n`).
  assert.match(r.steps[0].text, /<search> book of sand author <\/search>\s*$/);
  assert.deepEqual(
    r.steps[1].ids,
    (await model.tokenizer.encode(`<information>${ref.realistic.observation}</information>`)).ids,
  );
  assert.match(r.response, /borges <\/answer>$/);
  const rec = replayRecord({ id: 'q1', question, golden_answers: ['borges'] }, r, model, {
    mode: 'env',
    checkpoint: onnx,
  });
  assert.equal(RecordSchema.safeParse(rec).success, true);
  assert.equal(rec.response, await model.tokenizer.decode(r.ids));
  assert.deepEqual(
    rec.tokens!.loss_mask,
    r.steps.flatMap((s) => s.ids.map(() => (s.kind === 'model' ? 1 : 0))),
  );

  const sim = await replayQuestion(model, question, { mode: 'simulated', promptTemplate, maxObservationTokens: 200 });
  assert.deepEqual(
    sim.steps.slice(0, 2).map((s) => s.kind),
    ['model', 'observation'],
  );
  assert.match(sim.steps[1].text, /^<information>[^]*<\/information>$/);
});
