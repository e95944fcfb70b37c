// Real-editor proof: training seen from code-server with the packaged extension.
// 1. The live panel attaches to a run in progress that was started from a terminal (the real trainer, a short
//    pretrain of a tiny embedded model) and its charts fill as the trainer writes events.
// 2. "CoA: Train Stage" on the embedded default with a short config: the panel's charts fill, the run appears in
//    the Runs tree, cancel stops it with a checkpoint and "CoA: Resume Run" continues it past that step.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Frame } from 'playwright-core';
import { paths, pickQuick, repoRoot, runCommand, startEditor, until, webviewFrame, type Editor } from './harness';

/** A short run on a tiny model: many cheap steps (so there is time to watch and cancel), frequent checkpoints. */
function shortConfig(steps: number): string {
  return JSON.stringify(
    {
      seed: 1,
      threads: 1,
      device: 'cpu',
      benchmark: { persons: 24, companies: 6, cities: 6, countries: 3 },
      model: {
        embedded: {
          hidden_size: 32,
          num_layers: 2,
          num_heads: 2,
          num_kv_heads: 1,
          intermediate_size: 64,
          max_position: 256,
        },
      },
      stages: { pretrain: { steps, batch_size: 4, log_every: 1, warmup_steps: 2, checkpoint_every: 10, max_len: 128 } },
      eval: { limit: 6, max_new_tokens: 8, max_turns: 1 },
    },
    null,
    2,
  );
}

/** Events of a run directory, parsed (a partly written last line is skipped). */
export function readEvents(runDir: string): Record<string, any>[] {
  const file = join(runDir, 'events.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((l) => {
      try {
        return l.trim() ? [JSON.parse(l)] : [];
      } catch {
        return [];
      }
    });
}

/** Total points drawn by the live panel's charts, per metric. */
async function chartPoints(frame: Frame): Promise<Record<string, number>> {
  return frame.evaluate(() =>
    Object.fromEntries(
      Array.from(document.querySelectorAll('.chart[data-metric]')).map((c) => [
        c.getAttribute('data-metric')!,
        Number(c.getAttribute('data-points') ?? 0),
      ]),
    ),
  );
}

const livePanelFrame = (ed: Editor) =>
  webviewFrame(ed.page, async (f) => (await f.locator('.chart[data-metric], #initial-state').count()) > 0, 90_000);

let ed: Editor;
let trainer: ChildProcess | undefined;
before(async () => {
  ed = await startEditor({
    name: 'train',
    files: {
      'short.run.json': shortConfig(4000),
      'terminal.run.json': shortConfig(4000),
      'notes.coa': '<think>x</think>\n<answer>y</answer>\n',
    },
  });
});
after(async () => {
  if (trainer?.pid && trainer.exitCode === null)
    try {
      process.kill(-trainer.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  await ed?.close();
});

test('the live panel attaches to a run started from the terminal and its charts fill', async () => {
  const runDir = join(ed.workspace, 'runs', 'terminal-run');
  trainer = spawn(
    paths.python,
    [
      '-m',
      'coa_trainer',
      'train',
      '--stage',
      'pretrain',
      '--config',
      join(ed.workspace, 'terminal.run.json'),
      '--run-dir',
      runDir,
    ],
    {
      detached: true,
      stdio: 'ignore',
      env: {
        ...process.env,
        PYTHONPATH: join(repoRoot, 'src', 'trainer'),
        PYTHONUNBUFFERED: '1',
        COA_NODE: process.execPath,
      },
    },
  );
  try {
    await until(
      "the trainer's first metrics event",
      () => readEvents(runDir).some((e) => e.type === 'metrics'),
      180_000,
    );
    await runCommand(ed.page, 'CoA: Open Live Training Panel');
    await pickQuick(ed.page, 'terminal-run');
    const frame = await livePanelFrame(ed);
    const first = await until(
      'points in the loss chart',
      async () => {
        const p = await chartPoints(frame);
        return Object.values(p).some((n) => n > 0) && p;
      },
      90_000,
    );
    // Live: more points arrive while the trainer keeps writing.
    const more = await until(
      'the charts to grow',
      async () => {
        const p = await chartPoints(frame);
        return Object.entries(p).some(([k, n]) => n > (first[k] ?? 0)) && p;
      },
      90_000,
    );
    await ed.shot('panel-terminal-run');
    const metrics = readEvents(runDir).filter((e) => e.type === 'metrics');
    assert.ok(
      Object.keys(more).some((k) => /loss/.test(k)),
      `a loss chart should be drawn, charts: ${JSON.stringify(more)}`,
    );
    assert.ok(
      Math.max(...Object.values(more)) <= metrics.length,
      'no chart shows more points than metrics events written',
    );
  } finally {
    if (trainer.pid && trainer.exitCode === null)
      try {
        process.kill(-trainer.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
  }
});

// ---- "CoA: Train Stage" → panel → Runs tree → cancel → "CoA: Resume Run" (one run, tests in order) ----

let runDir = '';
const runId = () => runDir.split('/').pop()!;
const metricSteps = () =>
  readEvents(runDir)
    .filter((e) => e.type === 'metrics')
    .map((e) => e.step as number);

test('"CoA: Train Stage" on the embedded default model with a short config fills the live panel', async () => {
  const before = new Set(existsSync(join(ed.workspace, 'runs')) ? readdirSync(join(ed.workspace, 'runs')) : []);
  await runCommand(ed.page, 'CoA: Train Stage');
  // Titles and labels: src/extension/providers/train/picks.ts.
  await pickQuick(ed.page, /^Pretrain/, 'CoA: Train Stage (1/4)');
  await pickQuick(ed.page, 'short.run.json', 'CoA: Train Stage (2/4)');
  await pickQuick(ed.page, 'Embedded default model', 'CoA: Train Stage (3/4)');
  await pickQuick(ed.page, 'None (start fresh)', 'CoA: Train Stage (4/4)');
  const id = await until(
    'a new runs/<id> directory',
    () => {
      const now = existsSync(join(ed.workspace, 'runs')) ? readdirSync(join(ed.workspace, 'runs')) : [];
      return now.find((d) => !before.has(d) && d.endsWith('-pretrain'));
    },
    60_000,
  );
  runDir = join(ed.workspace, 'runs', id);
  await until('metrics events from the trainer the extension started', () => metricSteps().length > 0, 180_000);
  // Train Stage opens the live panel on the new run.
  const frame = await webviewFrame(
    ed.page,
    async (f) => (await f.locator(`.run[data-run*="${id}"]`).count()) > 0,
    90_000,
  );
  const points = await until(
    "the new run's charts to fill",
    async () => {
      const p = await chartPoints(frame);
      return (p.loss ?? 0) >= 3 && p;
    },
    120_000,
  );
  await ed.shot('train-stage-panel');
  assert.ok(points.loss >= 3, `loss chart points: ${JSON.stringify(points)}`);
  const started = readEvents(runDir).find((e) => e.type === 'run_started');
  assert.equal(started?.stage, 'pretrain');
  assert.equal(started?.config?.stages?.pretrain?.steps, 4000, 'the run uses the picked short config');
});

test('the run appears in the Runs tree', async () => {
  assert.ok(runDir, 'needs the Train Stage run');
  await ed.page
    .locator(
      '.activitybar .action-item a[aria-label^="CoA Studio"], .activitybar .action-item[aria-label^="CoA Studio"]',
    )
    .first()
    .click();
  const row = ed.page.locator('.sidebar .monaco-list-row', { hasText: runId() }).first();
  await row.waitFor({ timeout: 60_000 });
  await ed.shot('runs-tree');
  assert.match(await row.innerText(), new RegExp(runId()));
});

test('cancel stops the run with a checkpoint', async () => {
  assert.ok(runDir, 'needs the Train Stage run');
  // The progress notification's Cancel button (what a user clicks); the command is the fallback when the toast
  // has been collapsed into the notification centre.
  const cancel = ed.page
    .locator('.notification-toast', { hasText: runId() })
    .getByRole('button', { name: 'Cancel' })
    .first();
  if (await cancel.isVisible().catch(() => false)) await cancel.click();
  else await runCommand(ed.page, 'CoA: Cancel Run');
  const finished = await until(
    'stage_finished after cancel',
    () => readEvents(runDir).find((e) => e.type === 'stage_finished'),
    90_000,
  );
  await ed.shot('cancelled');
  assert.equal(finished.status, 'cancelled', `stage_finished: ${JSON.stringify(finished)}`);
  // SIGTERM → the trainer saves a checkpoint at the step it stopped at (not only the periodic ones).
  const saved = readEvents(runDir).filter((e) => e.type === 'checkpoint' && e.step === finished.step);
  // (Two when the cancel lands on a checkpoint_every step: the periodic one and the one saved on SIGTERM.)
  assert.ok(saved.length >= 1, `a checkpoint event at the cancel step ${finished.step}`);
  assert.ok(existsSync(saved[saved.length - 1].path), `checkpoint file ${saved[saved.length - 1].path}`);
  assert.ok(finished.step < 4000, 'cancelled before the end');
});

test('"CoA: Resume Run" continues the cancelled run past its last step', async () => {
  assert.ok(runDir, 'needs the Train Stage run');
  const stoppedAt = Math.max(...metricSteps());
  await runCommand(ed.page, 'CoA: Resume Run');
  await ed.shot('resume-pick-run');
  await pickQuick(ed.page, runId(), 'CoA: Resume Run (1/2)');
  await ed.shot('resume-pick-stage');
  await pickQuick(ed.page, /^pretrain/, 'CoA: Resume Run (2/2)');
  await ed.shot('resume-picked');
  const resumed = await until(
    'a resumed run_started',
    () =>
      readEvents(runDir)
        .filter((e) => e.type === 'run_started')
        .slice(1)
        .find((e) => e.resumed_from != null),
    120_000,
  );
  await until(`metrics past step ${stoppedAt}`, () => metricSteps().some((s) => s > stoppedAt), 180_000);
  await ed.shot('resumed');
  assert.equal(resumed.resumed_from, stoppedAt, `resumed from the checkpoint saved at cancel (step ${stoppedAt})`);
  // Done: stop it again (the harness would kill it anyway).
  await runCommand(ed.page, 'CoA: Cancel Run');
  await until(
    'the resumed run to stop',
    () => readEvents(runDir).filter((e) => e.type === 'stage_finished').length >= 2,
    90_000,
  ).catch(() => {});
});
