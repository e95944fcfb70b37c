// `npm run demo:core`: the trajectory core end to end, no training — convert the AutoCoA parquet, convert and
// validate example transcripts, score them (OTC-GRPO), print the stats table. (`npm run demo` is the training
// pipeline: scripts/demo.mjs.)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const runDir = join(root, 'runs', 'demo-core');
mkdirSync(runDir, { recursive: true });

function coa(title, args, { allowFail = false } = {}) {
  console.log(`\n▶ ${title}\n  $ coa ${args.join(' ')}`);
  const r = spawnSync(process.execPath, [join(root, 'bin/coa.js'), ...args], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0 && !allowFail) {
    console.error(`demo: step failed (exit ${r.status})`);
    process.exit(1);
  }
  return r.status;
}

if (!existsSync(join(root, 'dist/cli.js'))) {
  console.error('demo: dist/cli.js is missing — run `npm install` (it builds) or `npm run build`.');
  process.exit(1);
}

const parquet = join(root, 'examples', 'data', 'autocoa', 'hotpotqa_dev.parquet');
coa('Convert the AutoCoA HotpotQA dev set (verl parquet) to trajectory records', [
  'convert',
  '--from',
  'verl-parquet',
  parquet,
  '-o',
  join(runDir, 'autocoa-dev.coa.jsonl'),
]);
coa('Convert Search-R1 chat transcripts', [
  'convert',
  '--from',
  'search-r1',
  'examples/search-r1-transcripts.txt',
  '-o',
  join(runDir, 'search-r1.coa.jsonl'),
]);
coa("Validate them with Search-R1's strict sequence rule", [
  'validate',
  '--strict',
  join(runDir, 'search-r1.coa.jsonl'),
]);
coa(
  'Validate the example trajectories (four dialects, some deliberately malformed)',
  ['validate', 'examples/trajectories.coa.jsonl'],
  { allowFail: true },
);
coa('Score them with OTC-GRPO (c=4, α=1; grouped by question)', [
  'score',
  'examples/trajectories.coa.jsonl',
  '--scheme',
  'otc-grpo',
  '-o',
  join(runDir, 'scored.coa.jsonl'),
]);
coa('Statistics: EM, F1, TC, TP and format errors per dialect and stage', ['stats', join(runDir, 'scored.coa.jsonl')]);
console.log(`\ndemo: done — outputs in ${runDir}`);
