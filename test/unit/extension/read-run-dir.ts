// What the Runs view shows of a run directory (src/extension/providers/runs/model.ts), for tests in other languages
// (the TRL integration's run): prints {stages: [{name, status, checkpoints: [[label, path, external, final]]}]}.
// Usage: node --import tsx test/unit/extension/read-run-dir.ts <run dir>
import { basename } from 'node:path';
import { readRun, stageChildren } from '../../../src/extension/providers/runs/model';

const dir = process.argv[2];
const run = dir ? readRun(dir, basename(dir)) : null;
if (!run) {
  console.error(`not a run directory: ${dir}`);
  process.exit(2);
}
const stages = run.stages.map((stage) => ({
  name: stage.name,
  status: stage.status,
  checkpoints: stageChildren(run, stage).flatMap((n) =>
    n.kind === 'checkpoint' ? [[n.label, n.path, n.external, n.final]] : [],
  ),
}));
console.log(JSON.stringify({ stages }));
