// The agent-turn conformance vectors (test/conformance/agent-turns.json) through the editor's replay loop
// (src/replay/agent.ts replayQuestion): the real tags, tokenizer, decoding loop and tool calls, with the exported
// checkpoint replaced by a policy that writes the vector's script. The trainer's rollout loop runs the same file
// (src/trainer/tests/test_agent_turns.py), so replay and training cut, stop, call and append alike.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { replayQuestion } from '../../../src/replay/agent';
import type { ModelInfo, OnnxModel } from '../../../src/replay/model';
import { Tokenizer } from '../../../src/replay/tokenizer';
import { REPO } from './fixture';

interface Case {
  name: string;
  mode: 'tool' | 'simulated';
  prompt: string;
  limits: { max_turns: number; max_new_tokens: number; max_obs_tokens: number; max_len: number };
  policy: string;
  tool: Record<string, string | null>;
  expect: {
    response: string;
    mask: string;
    finished: boolean;
    truncated: boolean;
    queries: string[];
    tool_failures: number;
  };
}

const VECTORS = JSON.parse(readFileSync(join(REPO, 'test/conformance/agent-turns.json'), 'utf8')) as {
  tokenizer: unknown;
  cases: Case[];
};

/** The vectors' tokenizer, through the replay's own loader (a tokenizer.json file, as an export has). */
function vectorTokenizer(): Tokenizer {
  const dir = mkdtempSync(join(tmpdir(), 'coa-agent-turns-'));
  try {
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(VECTORS.tokenizer));
    return Tokenizer.fromFile(join(dir, 'tokenizer.json'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A checkpoint that writes its script by position: at response position k (the context's length minus the prompt's)
 * its logits are one-hot on the script's k-th token (EOS past its end), whatever the context holds. Shaped as the
 * replay reads an exported model: its tokenizer, its coa_model.json and a decoder fed token ids.
 */
function scriptedModel(tok: Tokenizer, script: number[], promptLength: number): OnnxModel {
  const id = (s: string) => tok.tokenToId(s)!;
  const tags = {
    think_open: '<think>',
    think_close: '</think>',
    action_open: '<search>',
    action_close: '</search>',
    obs_open: '<observation>',
    obs_close: '</observation>',
    answer_open: '<answer>',
    answer_close: '</answer>',
  };
  const info: ModelInfo = {
    format: 'coa-onnx-1',
    dialect: 'coa',
    tags,
    tag_ids: Object.fromEntries(Object.values(tags).map((t) => [t, id(t)])),
    eos_id: id('<eos>'),
    pad_id: id('<pad>'),
    vocab_size: tok.vocabSize,
    kv: { layers: 0, kv_heads: 0, head_dim: 0 },
    prompt_template: '{question}',
    context: null,
  };
  const decoder = {
    ids: [] as number[],
    async feed(ids: readonly number[]) {
      if (ids.length === 0) throw new Error('feed: no tokens');
      decoder.ids.push(...ids);
      const k = decoder.ids.length - promptLength;
      const logits = new Float32Array(ids.length * tok.vocabSize);
      logits[(ids.length - 1) * tok.vocabSize + (k < script.length ? script[k] : id('<eos>'))] = 1;
      return { logits, vocab: tok.vocabSize };
    },
  };
  return { tokenizer: tok, info, decoder: () => decoder } as unknown as OnnxModel;
}

const tok = vectorTokenizer();

for (const c of VECTORS.cases) {
  test(`replay runs the agent-turn vector: ${c.name}`, async () => {
    const asked: string[] = [];
    const model = scriptedModel(tok, (await tok.encode(c.policy)).ids, (await tok.encode(c.prompt)).ids.length);
    const r = await replayQuestion(model, c.prompt, {
      mode: c.mode === 'simulated' ? 'simulated' : 'env',
      tool: async (query) => {
        asked.push(query);
        assert.ok(Object.hasOwn(c.tool, query), `a query the vector does not expect: ${JSON.stringify(query)}`);
        const answer = c.tool[query];
        if (answer === null) throw new Error('the search failed');
        return answer;
      },
      maxTurns: c.limits.max_turns,
      maxNewTokens: c.limits.max_new_tokens,
      maxObservationTokens: c.limits.max_obs_tokens,
      maxTotal: c.limits.max_len,
    });
    const queries = r.steps.filter((s) => s.kind === 'observation').map((s) => (s.simulated ? '' : s.query));
    assert.deepEqual(
      {
        response: r.ids.map((i) => tok.idToTokenText(i)).join(' '),
        mask: r.lossMask.join(' '),
        finished: r.finished,
        truncated: r.truncated,
        queries,
        tool_failures: r.toolFailures,
      },
      c.expect,
    );
    assert.deepEqual(asked, c.mode === 'simulated' ? [] : c.expect.queries);
    assert.deepEqual(
      r.logprobs.map((lp) => lp === null),
      r.lossMask.map((m) => m === 0),
      'only what the policy wrote is scored',
    );
    assert.equal(r.toolCalls, c.expect.queries.length);
  });
}
