// The replay engine against PyTorch on a tiny model exported by `coa_trainer export-onnx`: tokenizer ids,
// offsets and decoding identical to the Python tokenizer; logits within 1e-4 (full prefill and token by token
// through the KV cache); greedy tokens identical; the agent loop with the real env server and simulated.
import test from 'node:test';
import assert from 'node:assert/strict';
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

test('tokenizer: ids, offsets and decode identical to the Python tokenizer', () => {
  const { dir, ref } = tinyModel();
  const tok = Tokenizer.fromFile(join(dir, 'onnx/tokenizer.json'));
  for (const p of ref.probes) {
    const enc = tok.encode(p.text);
    assert.deepEqual(enc.ids, p.ids, p.text);
    assert.deepEqual(enc.offsets, p.offsets, p.text);
    assert.equal(tok.decode(p.ids), p.decoded);
  }
  const alt = Tokenizer.fromFile(join(dir, 'alt_tokenizer.json'));
  for (const p of ref.alt) {
    const enc = alt.encode(p.text);
    assert.deepEqual(enc.ids, p.ids, p.text);
    assert.deepEqual(enc.offsets, p.offsets, p.text);
    assert.equal(alt.decode(p.ids), p.decoded);
  }
  for (const style of ['gpt2', 'qwen2'] as const) {
    const bpe = Tokenizer.fromFile(join(dir, `bpe_${style}.json`));
    for (const p of ref.bpe[style]) {
      assert.deepEqual(bpe.encode(p.text).ids, p.ids, `${style}: ${JSON.stringify(p.text)}`);
      assert.equal(bpe.decode(p.ids), p.decoded, `${style} decode`);
    }
  }
  const d = tok.decodeWithOffsets(ref.probes[1].ids);
  for (const [i, id] of ref.probes[1].ids.entries()) assert.equal(d.text.slice(d.offsets[i]).startsWith(tok.idToTokenText(id)!), true);
  assert.throws(() => new Tokenizer({ model: { type: 'Unigram', vocab: [] } }, 'x/tokenizer.json'), (e: unknown) => e instanceof TokenizerError && /x\/tokenizer\.json: model type "Unigram"/.test(e.message));
  assert.throws(() => new Tokenizer({ model: { type: 'BPE', vocab: {} } }, 'y.json'), /y\.json: BPE model without merges/);
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
    for (const [i, id] of ref.prompt_ids.entries()) worstCached = Math.max(worstCached, maxAbsDiff(lastRow(await dec.feed([id])), ref.prompt_logits[i]));
    console.log(`replay logits max |Δ| vs PyTorch: prefill ${worstFull.toExponential(2)}, cached ${worstCached.toExponential(2)}`);
    assert.ok(worstFull <= 1e-4, `prefill max |Δ| ${worstFull}`);
    assert.ok(worstCached <= 1e-4, `cached max |Δ| ${worstCached}`);

    const g = await generate(model.decoder(), ref.prompt_ids, { maxNewTokens: ref.greedy_ids.length, stopIds: new Set([model.info.eos_id!]) });
    assert.deepEqual(g.ids, ref.greedy_ids);
    assert.equal(model.tokenizer.decode(g.ids), ref.greedy_text);
    assert.ok(g.logprobs.every((x) => x <= 0));

    const ctl = new AbortController();
    ctl.abort();
    await assert.rejects(generate(model.decoder(), ref.prompt_ids, { maxNewTokens: 5, stopIds: new Set(), signal: ctl.signal }), CancelledError);
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
  const expected = model.tokenizer.encode(`<observation>${await tool('book of sand author')}</observation>`).ids;
  assert.deepEqual(obs.ids, expected);
  assert.deepEqual(r.lossMask, r.steps.flatMap((s) => s.ids.map(() => (s.kind === 'model' ? 1 : 0))));
  assert.ok(r.logprobs.every((x, i) => (r.lossMask[i] === 0) === (x === null)));
  assert.match(r.steps[2].text, /<answer> borges <\/answer>$/);
  const rec = replayRecord({ id: 'q1', question: QUESTION, golden_answers: ['borges'] }, r, model, { mode: 'env', checkpoint: onnx });
  assert.equal(RecordSchema.safeParse(rec).success, true);
  for (const [i, id] of rec.tokens!.ids.entries()) assert.ok(rec.response.slice(rec.tokens!.offsets![i]).startsWith(model.tokenizer.idToTokenText(id)!));
  assert.deepEqual(checkFormat(rec.response, { dialect: 'coa' }).diagnostics.filter((d) => d.severity === 'error'), []);
});

test('simulated environment: the model writes its own observation, masked; sampling is seeded', async (t) => {
  const { onnx } = tinyModel();
  const model = await OnnxModel.load(onnx);
  t.after(() => model.release());
  const r = await replayQuestion(model, QUESTION, { mode: 'simulated' });
  assert.deepEqual(r.steps.map((s) => s.kind), ['model', 'observation', 'model']);
  assert.equal(r.steps[1].simulated, true);
  assert.match(r.steps[1].text, /^<observation> doc 1 .*<\/observation>$/);
  assert.ok(r.steps[1].ids.length > 3);
  assert.ok(r.lossMask.slice(r.steps[1].first, r.steps[1].first + r.steps[1].ids.length).every((m) => m === 0));
  const a = await replayQuestion(model, QUESTION, { mode: 'simulated', temperature: 1.5, seed: 3, maxNewTokens: 12 });
  const b = await replayQuestion(model, QUESTION, { mode: 'simulated', temperature: 1.5, seed: 3, maxNewTokens: 12 });
  assert.deepEqual(a.ids, b.ids);
});
