// "CoA: Train Stage", "CoA: Resume Run", "CoA: Cancel Run", "CoA: Run the Embedded Demo" and ONNX export: quick
// picks (./request.ts) → runs/<id>/config.json → the trainer spawned with the project's Python (process/manager.ts,
// ./launch.ts), the environment server started for RL stages, progress in a cancellable notification and the status
// bar (./progress.ts), and the live panel opened on the run.
//
// For the e2e tests (code-server + Playwright): the quick picks' exact texts are in ./picks.ts.
//   Train Stage:  title 'CoA: Train Stage (1/4): stage'  items 'Pretrain' 'SFT-1' 'SFT-2' 'SFT-3' 'RL-1' 'RL-2' 'Whole pipeline'
//                 title 'CoA: Train Stage (2/4): run config'  items 'Embedded default config', then each *.run.json by
//                       workspace-relative path (e.g. 'examples/embedded-demo.run.json')
//                 title 'CoA: Train Stage (3/4): model'  items 'Embedded default model', 'Hugging Face model directory…'
//                 title 'CoA: Train Stage (4/4): starting checkpoint'  items 'None (start fresh)', '<run id> / <stage> final', 'Browse…'
//   Resume Run:   title 'CoA: Resume Run (1/2): run'  items = run ids;  'CoA: Resume Run (2/2): stage'  items = stage names
//   Cancel:       the notification's Cancel button, or "CoA: Cancel Run". The run directory is runs/<UTC time>-<stage>.
//                 a config with a data section (or the config item 'Your own data…') adds 'CoA: Train Stage: data':
//                       'Data from the run config' / 'Choose other data files…' → slots, then 'Use this data'
//   Scripted:     executeCommand('coaStudio.trainStage', { stage, config?, model?, checkpoint?, data? }) skips the picks
//                 (checked against ./requests.ts TrainRequestSchema; a wrong field is said, nothing is started).
//   Data:         a config naming data files or a model directory is checked with `coa data check` before the
//                 trainer starts; an error names the file, line and field and nothing is started.
import * as vscode from 'vscode';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';
import { readConfig } from '../../config';
import type { LivePanels } from '../livePanel/register';
import type { ManagedProcess, ProcessResult } from '../../process/manager';
import type { RunningEnvServer } from '../../process/envServer';
import {
  ENV_STAGES,
  PIPELINE,
  composeRunConfig,
  exportOnnxArgs,
  makeRunId,
  stageLabel,
  trainerArgs,
  trainerTokenEnv,
} from '../../process/trainer';
import { requireTrust, workspaceRoot } from '../../workspace';
import { configFromEvents, readRun, readRuns, resumable } from '../runs/model';
import { PLACEHOLDERS, TITLES, resumableRuns, resumableStages } from './picks';
import { resolveConfigPaths, dataEntries } from '../../../core/data/paths';
import { applyDataPicks, hasPicks } from './data';
import { Launcher } from './launch';
import { RunProgress, TrainingStatus } from './progress';
import { pickCollectRequest, pickTrainRequest, readUserConfig } from './request';
import type { CollectRequest, TrainRequest } from './requests';
import { COLLECT_LABELS, collectionFiles, collectionSummary } from './collectPicks';
import { COLLECT } from '../../process/trainer';

interface ActiveRun {
  runDir: string;
  stage: string;
  proc: ManagedProcess;
  env?: RunningEnvServer;
}

/** What training reaches of the rest of the extension: the live panel, opened on each run it starts. */
export interface TrainSeams {
  livePanels: Pick<LivePanels, 'open'>;
}

export function registerTrain(
  context: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
  seams: TrainSeams,
): TrainController {
  const controller = new TrainController(context, log, seams);
  context.subscriptions.push(controller);
  return controller;
}

export class TrainController implements vscode.Disposable {
  private readonly active = new Map<string, ActiveRun>();
  private readonly status = new TrainingStatus();
  private readonly launcher: Launcher;
  private readonly runsChanged = new vscode.EventEmitter<void>();
  /** Fired when a run this extension started changes state (the Runs view refreshes). */
  readonly onRunsChanged = this.runsChanged.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly seams: TrainSeams,
  ) {
    this.launcher = new Launcher(context.extensionPath, log);
  }

  dispose(): void {
    for (const run of this.active.values()) {
      void run.proc.cancel();
      void run.env?.stop();
    }
    this.status.dispose();
    this.runsChanged.dispose();
  }

  get running(): string[] {
    return [...this.active.keys()];
  }

  // ------------------------------------------------------------------ commands

  async trainStage(request?: TrainRequest): Promise<void> {
    if (!(await requireTrust('Training'))) return;
    const root = workspaceRoot();
    if (!root)
      return void vscode.window.showErrorMessage(
        'CoA: Train Stage needs an open folder: runs are written to <folder>/runs/<id>.',
      );
    const req = request ?? (await pickTrainRequest(root));
    if (!req) return;
    const userConfig = req.config ? readUserConfig(join(root, '.'), req.config) : null;
    if (userConfig === undefined) return;
    // runs/<id>/config.json is a copy: paths relative to the user's config file are made absolute first.
    let base =
      userConfig && req.config
        ? resolveConfigPaths(userConfig, dirname(isAbsolute(req.config) ? req.config : join(root, req.config)))
        : userConfig;
    if (hasPicks(req.data)) base = applyDataPicks(base ?? {}, req.data);
    if (req.embeddedModel && base && typeof base.model === 'object' && base.model)
      base = { ...base, model: { ...base.model, path: null } };
    const runName = typeof base?.name === 'string' ? base.name : undefined;
    let runDir = join(root, 'runs', makeRunId(new Date(), req.stage, runName));
    for (let i = 2; existsSync(runDir); i++)
      runDir = join(root, 'runs', `${makeRunId(new Date(), req.stage, runName)}-${i}`);
    const config = composeRunConfig({
      base,
      stage: req.stage,
      modelPath: req.model ?? null,
      initFrom: req.checkpoint ?? null,
      cli: this.launcher.cli,
      teacherUrl: req.teacherUrl ?? null,
    });
    mkdirSync(runDir, { recursive: true });
    const configPath = join(runDir, 'config.json');
    writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
    if (dataEntries(config).length && !(await this.launcher.checkData(configPath, runDir))) return;
    await this.start(runDir, req.stage, configPath, false);
  }

  /** "CoA: Collect Trajectories": Train Stage's config and data picks, then the teacher; the run is a `collect`. */
  async collectTrajectories(request?: CollectRequest): Promise<void> {
    if (!(await requireTrust('Collecting trajectories'))) return;
    const root = workspaceRoot();
    if (!root)
      return void vscode.window.showErrorMessage(
        'CoA: Collect Trajectories needs an open folder: collections are written to <folder>/runs/<id>.',
      );
    const req = request ?? (await pickCollectRequest(root));
    if (!req) return;
    await this.trainStage({
      stage: COLLECT.id,
      config: req.config,
      checkpoint: req.teacher,
      teacherUrl: req.teacherUrl,
      data: req.data,
    });
  }

  async resumeRun(runDir?: string, stage?: string): Promise<void> {
    this.log.info(`resume requested${runDir ? ` for ${runDir}` : ''}${stage ? ` (${stage})` : ''}`);
    if (!(await requireTrust('Resuming a run'))) return;
    const root = workspaceRoot();
    if (!root) return;
    if (!runDir) {
      const all = readRuns(join(root, 'runs'));
      const runs = resumableRuns(all);
      if (!runs.length) {
        const why = all.length
          ? `no run in runs/ has a cancelled or failed stage with a checkpoint (${all.length} finished or never checkpointed)`
          : 'no run in runs/';
        return void vscode.window.showInformationMessage(
          `CoA: nothing to resume: ${why}. Start a stage with "CoA: Train Stage".`,
        );
      }
      const pick = await vscode.window.showQuickPick(
        runs.map((r) => ({ label: r.id, description: r.status, run: r })),
        { title: TITLES.resumeRun, placeHolder: PLACEHOLDERS.resumeRun, ignoreFocusOut: true },
      );
      if (!pick) return void this.log.info('resume: no run picked');
      runDir = pick.run.dir;
    }
    const run = readRun(runDir, basename(runDir));
    if (!run) return void vscode.window.showErrorMessage(`CoA: ${runDir} is not a run directory (no events.jsonl).`);
    if (!stage) {
      const items = resumableStages(run).map((s) => ({
        label: s.name,
        description: `${s.status}${s.step !== null ? ` · step ${s.step}/${s.total ?? '?'}` : ''}`,
      }));
      if (!run.stages.length) items.push({ label: PIPELINE.id, description: 'the whole pipeline' });
      if (!items.length)
        return void vscode.window.showInformationMessage(
          `CoA: nothing to resume in ${run.id}: every stage finished or stopped before its first checkpoint. Start a stage with "CoA: Train Stage".`,
        );
      const pick = await vscode.window.showQuickPick(items, {
        title: TITLES.resumeStage,
        placeHolder: PLACEHOLDERS.resumeStage,
        ignoreFocusOut: true,
      });
      if (!pick) return void this.log.info('resume: no stage picked');
      stage = pick.label;
    }
    this.log.info(`resume: ${runDir} stage ${stage}`);
    const previous = this.active.get(runDir);
    if (previous && !previous.proc.cancelling)
      return void vscode.window.showWarningMessage(`CoA: ${basename(runDir)} is already running.`);
    if (previous) {
      // Cancelled a moment ago: the trainer is still writing its checkpoint. Resume once it has exited.
      this.log.info(`resume: waiting for the cancelled trainer of ${basename(runDir)} to exit`);
      await previous.proc.done;
      for (let i = 0; i < 100 && this.active.has(runDir); i++) await new Promise((r) => setTimeout(r, 100));
    }
    const configPath = join(runDir, 'config.json');
    if (!existsSync(configPath) && !recoverConfig(runDir, configPath)) {
      return void vscode.window.showErrorMessage(
        `CoA: cannot resume ${basename(runDir)}: no config.json and no run_started event to take the config from.`,
      );
    }
    await this.start(runDir, stage, configPath, true);
  }

  async cancelRun(runDir?: string): Promise<void> {
    const dirs = runDir ? [runDir] : this.running;
    if (!dirs.length) return void vscode.window.showInformationMessage('CoA: no training run is in progress.');
    let dir = dirs[0];
    if (dirs.length > 1) {
      const pick = await vscode.window.showQuickPick(
        dirs.map((d) => basename(d)),
        { title: 'CoA: Cancel Run', placeHolder: 'Pick the run to cancel' },
      );
      if (!pick) return;
      dir = dirs.find((d) => basename(d) === pick)!;
    }
    await this.active.get(dir)?.proc.cancel();
  }

  async runDemo(): Promise<void> {
    const demo = join(this.context.extensionPath, 'examples', 'embedded-demo.run.json');
    await this.trainStage({ stage: PIPELINE.id, config: existsSync(demo) ? demo : undefined });
  }

  /**
   * "Export to ONNX" (Runs view): progress in a notification; the result names the file without waiting for the
   * message to be read (a caller awaiting the toast waited until the user closed it).
   */
  async exportOnnx(finalDir: string): Promise<void> {
    if (!(await requireTrust('ONNX export'))) return;
    let out: string | undefined;
    try {
      out = await vscode.window.withProgress(
        {
          location: vscode.ProgressLocation.Notification,
          title: `CoA: exporting ${relative(workspaceRoot() ?? '', finalDir)} to ONNX`,
          cancellable: true,
        },
        (_p, token) => {
          const abort = new AbortController();
          token.onCancellationRequested(() => abort.abort());
          return this.exportToOnnx(finalDir, abort.signal);
        },
      );
    } catch (e) {
      void this.launcher.showFailure((e as Error).message);
      return;
    }
    if (!out) return;
    const model = out;
    void vscode.window.showInformationMessage(`CoA: exported ${model}`, 'Reveal').then((pick) => {
      if (pick) void vscode.commands.executeCommand('revealInExplorer', vscode.Uri.file(model));
    });
  }

  /**
   * A stage's final model exported to `<stage>/onnx/model.onnx` by the trainer's `export-onnx`: the model's path,
   * undefined when cancelled; throws the trainer's message when it fails. Shows nothing and asks nothing: callers
   * check trust and report progress (the fork exports inside its own progress).
   */
  async exportToOnnx(finalDir: string, signal?: AbortSignal): Promise<string | undefined> {
    const out = join(dirname(finalDir), 'onnx', 'model.onnx');
    const proc = this.launcher.pythonProcess('ONNX export', exportOnnxArgs(finalDir, out));
    const cancel = () => void proc.cancel();
    if (signal?.aborted) cancel();
    signal?.addEventListener('abort', cancel, { once: true });
    const result = await proc.done.finally(() => signal?.removeEventListener('abort', cancel));
    this.runsChanged.fire();
    if (result.status === 'ok') return out;
    if (result.status === 'cancelled') return undefined;
    throw new Error(result.message);
  }

  // ------------------------------------------------------------------ the run

  private async start(runDir: string, stage: string, configPath: string, resume: boolean): Promise<void> {
    const runId = basename(runDir);
    const title = `CoA: ${resume ? 'resuming' : 'training'} ${stageLabel(stage)} (${runId})`;
    let env: RunningEnvServer | undefined;
    if (ENV_STAGES.includes(stage)) {
      env = await this.launcher.startEnvFor(runDir, configPath);
      if (!env) return;
    }
    this.status.starting(title, runDir, stage);
    const progress = new RunProgress(this.status, this.log, () => this.runsChanged.fire());
    const inv = { stage, config: configPath, runDir, resume, env: env && { url: env.url, token: env.token } };
    const proc = this.launcher.pythonProcess('trainer', trainerArgs(inv), {
      env: { ...this.launcher.childEnv(), ...trainerTokenEnv(inv) },
      secrets: env ? [env.token] : [],
      graceMs: readConfig().cancelGraceSeconds * 1000, // the trainer saves a checkpoint on SIGTERM
      onJson: (_v, line) => progress.onLine(line),
    });
    this.active.set(runDir, { runDir, stage, proc, env });
    this.runsChanged.fire();
    if (readConfig().openLivePanelOnStart) void this.seams.livePanels.open(vscode.Uri.file(runDir));

    // The command returns once the trainer is spawned; the notification follows the run to its end.
    const ended = vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      (p, token) => {
        progress.attach(p);
        token.onCancellationRequested(() => {
          progress.say('cancelling: saving a checkpoint…');
          void proc.cancel();
        });
        return proc.done;
      },
    );
    void Promise.resolve(ended)
      .then((result) => this.ended(result, { runDir, stage, env, errorMessage: () => progress.errorMessage }))
      .catch((e: unknown) => this.log.error(`run ${runId}: ${(e as Error).stack ?? e}`));
  }

  private async ended(
    result: ProcessResult,
    run: { runDir: string; stage: string; env?: RunningEnvServer; errorMessage: () => string | undefined },
  ): Promise<void> {
    const { runDir, stage, env } = run;
    const runId = basename(runDir);
    await env?.stop();
    this.active.delete(runDir);
    if (this.active.size === 0) this.status.hide();
    this.runsChanged.fire();
    if (result.status === 'ok' && stage === COLLECT.id) {
      // the collection opens in the trajectory notebook (filter it by reward and mode there)
      const files = collectionFiles(runDir);
      const pick = await vscode.window.showInformationMessage(
        `CoA: collection finished (${runId}): ${collectionSummary(runDir) ?? 'see its report'}.`,
        COLLECT_LABELS.openCollection,
        COLLECT_LABELS.openReport,
      );
      if (pick === COLLECT_LABELS.openCollection && existsSync(files.collection))
        await vscode.commands.executeCommand('vscode.openWith', vscode.Uri.file(files.collection), 'coa-trajectories');
      if (pick === COLLECT_LABELS.openReport && existsSync(files.report))
        await vscode.commands.executeCommand('markdown.showPreview', vscode.Uri.file(files.report));
    } else if (result.status === 'ok') {
      const pick = await vscode.window.showInformationMessage(
        `CoA: ${stageLabel(stage)} finished (${runId}).`,
        'Open Live Panel',
      );
      if (pick) await this.seams.livePanels.open(vscode.Uri.file(runDir));
    } else if (result.status === 'cancelled' && canResume(runDir, stage)) {
      const pick = await vscode.window.showInformationMessage(
        `CoA: ${stageLabel(stage)} cancelled (${runId}); the trainer saved a checkpoint.`,
        'Resume Run',
      );
      if (pick) await this.resumeRun(runDir, stage);
    } else if (result.status === 'cancelled') {
      void vscode.window.showInformationMessage(
        `CoA: ${stageLabel(stage)} cancelled (${runId}) before its first checkpoint; train it again to start over.`,
      );
    } else {
      // The trainer's own error event says what was wrong more precisely than an exit code.
      const errorMessage = run.errorMessage();
      const message = errorMessage && result.kind === 'crash' ? `The trainer stopped: ${errorMessage}` : result.message;
      // "Resume Run" only from a checkpoint: a stage that failed before its first one would fail the same way again.
      await this.launcher.showFailure(
        message,
        canResume(runDir, stage) ? () => this.resumeRun(runDir, stage) : undefined,
      );
    }
  }
}

/** The stage (the pipeline: any of its stages) has a checkpoint Resume Run can continue from. */
function canResume(runDir: string, stage: string): boolean {
  const run = readRun(runDir, basename(runDir));
  return !!run?.stages.some((s) => (stage === PIPELINE.id || s.name === stage) && resumable(s));
}

/** A run started from a terminal has no runs/<id>/config.json: take it from its last run_started event. */
function recoverConfig(runDir: string, configPath: string): boolean {
  const config = configFromEvents(runDir);
  if (config) writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
  return config !== null;
}
