// Replay benchmark: export a trained stage of a run with `coa_trainer export-onnx`, then in onnxruntime-node
// (1) replay the run's greedy test-set evaluation against the environment server and count trajectories whose
// token ids are identical to the trainer's, (2) measure KV-cached vs uncached decoding speed, (3) per-step latency.
// Usage: node --import tsx bench/replay/run.ts [--run runs/demo-measure] [--stage rl2] [--eval eval/results-sft-rl-test.jsonl] [--limit 100]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { replayQuestion } from '../../src/replay/agent';
import { generate } from '../../src/replay/generate';
import { OnnxModel, lastRow } from '../../src/replay/model';
import { startEnvServer } from '../../src/env/server';
import { EnvClient } from '../../src/env/client';
import { writeResults } from '../results';

const ROOT = resolve(__dirname, '../..');
const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : def;
};
const runDir = resolve(ROOT, arg('run', 'runs/demo-measure'));
const stage = arg('stage', 'rl2');
const evalFile = join(runDir, arg('eval', 'eval/results-sft-rl-test.jsonl'));
const limit = Number(arg('limit', '100'));
const write = !process.argv.includes('--no-write');

const modelDir = join(runDir, 'stages', stage, 'final');
const corpus = join(runDir, 'data', 'corpus.jsonl');
for (const f of [modelDir, corpus, evalFile]) {
  if (!existsSync(f)) {
    console.error(`bench/replay: ${f} is missing — run \`npm run demo\` first or pass --run/--stage/--eval`);
    process.exit(1);
  }
}
// The run's config (any stage's copy under pipeline/): its eval limits and prompt template, else the defaults.
const pipelineDir = join(runDir, 'pipeline');
const configFile = existsSync(pipelineDir) ? readdirSync(pipelineDir).find((f) => f.endsWith('.run.json')) : undefined;
const run = (configFile ? JSON.parse(readFileSync(join(pipelineDir, configFile), 'utf8')) : {}) as {
  eval?: { max_turns: number; max_new_tokens: number; top_k: number };
  prompt_template?: string;
};
const ev = run.eval ?? { max_turns: 4, max_new_tokens: 48, top_k: 2 };

async function main(): Promise<void> {
  const out = join(ROOT, '.cache', 'bench-replay', stage);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const onnx = join(out, 'model.onnx');
  let t = performance.now();
  const exportLog = execFileSync(
    join(ROOT, '.venv/bin/python'),
    [
      '-m',
      'coa_trainer',
      'export-onnx',
      '--checkpoint',
      modelDir,
      '-o',
      onnx,
      '--prompt-template',
      run.prompt_template ?? 'question : {question}\n',
    ],
    {
      cwd: join(ROOT, 'src/trainer'),
      env: { ...process.env, OMP_NUM_THREADS: '1' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const exportS = (performance.now() - t) / 1000;
  const delta = (exportLog.match(/max \|Δ\| vs PyTorch = ([\d.e+-]+)/) ?? [])[1] ?? '?';
  console.log(`export: ${exportS.toFixed(1)} s, max |Δ| ${delta}`);

  const records = readFileSync(evalFile, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))
    .slice(0, limit) as {
    id: string;
    question: string;
    tokens: { ids: number[] };
  }[];
  const server = await startEnvServer({
    corpus,
    dialect: 'coa',
    indexDir: mkdtempSync(join(tmpdir(), 'coa-bench-replay-')),
  });
  const client = new EnvClient({ url: server.url, token: server.token });
  const model = await OnnxModel.load(onnx, { threads: 1 });
  let same = 0;
  let firstDiff = '';
  const turnMs: number[] = [];
  let genTokens = 0;
  let genMs = 0;
  t = performance.now();
  for (const r of records) {
    const res = await replayQuestion(model, r.question, {
      mode: 'env',
      maxTurns: ev.max_turns,
      maxNewTokens: ev.max_new_tokens,
      tool: async (q) => (await client.search({ queries: [q], top_k: ev.top_k, dialect: 'coa' })).observations[0],
    });
    for (const s of res.steps) {
      if (s.kind !== 'model') continue;
      turnMs.push(s.latencyMs);
      genTokens += s.ids.length;
      genMs += s.latencyMs;
    }
    if (JSON.stringify(res.ids) === JSON.stringify(r.tokens.ids)) same++;
    else if (!firstDiff)
      firstDiff = `${r.id}: replay ${JSON.stringify(res.response.slice(0, 120))} vs eval ids ${r.tokens.ids.length}`;
  }
  const replayS = (performance.now() - t) / 1000;
  await server.close();
  turnMs.sort((a, b) => a - b);
  const pct = (p: number) => turnMs[Math.min(turnMs.length - 1, Math.floor(p * turnMs.length))];

  // Decoding speed, batch 1, 256 new tokens, no stop token.
  const prompt = (
    await model.tokenizer.encode(
      (run.prompt_template ?? 'question : {question}\n').replace('{question}', records[0].question),
    )
  ).ids;
  t = performance.now();
  const kv = await generate(model.decoder(), prompt, { maxNewTokens: 256, stopIds: new Set() });
  const kvS = (performance.now() - t) / 1000;
  t = performance.now();
  const ids = prompt.slice();
  for (let i = 0; i < 256; i++) {
    const row = lastRow(await model.decoder().feed(ids));
    let a = 0;
    for (let j = 1; j < row.length; j++) if (row[j] > row[a]) a = j;
    ids.push(a);
  }
  const noKvS = (performance.now() - t) / 1000;
  const identical = JSON.stringify(ids.slice(prompt.length)) === JSON.stringify(kv.ids);
  await model.release();

  const body = `Command: \`node --import tsx bench/replay/run.ts --run ${resolve(runDir).replace(ROOT + '/', '')} --stage ${stage} --limit ${limit}\`
  Engine: onnxruntime-node ${(require('onnxruntime-node/package.json') as { version: string }).version}, CPU, 1 intra-op thread, batch 1 (machine shared: figures vary run to run).

  Export (\`python -m coa_trainer export-onnx\`, stage \`${stage}\` of the run, ${model.info.kv.layers} layers, vocab ${model.info.vocab_size}):
  ${exportS.toFixed(1)} s including the PyTorch check; logits max |Δ| vs PyTorch ${delta}.

  Greedy replay of the run's test-set evaluation (\`${evalFile.replace(runDir + '/', '')}\`, ${records.length} questions, env server search
  top_k ${ev.top_k}, max ${ev.max_turns} tool calls, ${ev.max_new_tokens} tokens per turn): **${same} / ${records.length}** trajectories token-identical
  to the trainer's (PyTorch, batched with left padding)${firstDiff ? `; first difference: ${firstDiff}` : ''}. ${replayS.toFixed(1)} s in all.

  | model turn latency | ms |
  |---|---|
  | p50 | ${pct(0.5).toFixed(1)} |
  | p90 | ${pct(0.9).toFixed(1)} |
  | max | ${turnMs[turnMs.length - 1].toFixed(1)} |

  Generation inside replays: ${(genTokens / (genMs / 1000)).toFixed(0)} tokens/s.

  | decoding 256 tokens, batch 1 | tokens/s |
  |---|---|
  | KV cache (\`generate\`) | ${(256 / kvS).toFixed(0)} |
  | no cache (whole sequence per token) | ${(256 / noKvS).toFixed(0)} |
  | speed-up | ${(noKvS / kvS).toFixed(1)}× |

  Same tokens with and without the cache: ${identical ? 'yes' : 'NO'}.`;
  const text = body.replace(/\n {2}/g, '\n'); // the template is indented with the code
  console.log(text);
  if (write) writeResults('bench/replay', text);
}

void main();
