// "CoA: Train Stage", "CoA: Resume Run", "CoA: Cancel Run", "CoA: Run the Embedded Demo" and ONNX export: quick
// picks → runs/<id>/config.json → the trainer spawned with the project's Python (process/manager.ts), the
// environment server started for RL stages, progress in a cancellable notification and the status bar, and
// the live panel opened on the run.
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
//   Scripted:     executeCommand('coaStudio.trainStage', { stage, config?, model?, checkpoint?, data? }) skips the picks.
//   Data:         a config naming data files or a model directory is checked with `coa data check` before the
//                 trainer starts; an error names the file, line and field and nothing is started.
import * as vscode from 'vscode';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';
import { parse as parseJsonc, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { parseEvent } from '../../../core/events';
import { readConfig } from '../../config';
import { resolvePython } from '../../python';
import { ManagedProcess, type ProcessResult } from '../../process/manager';
import { startEnvServer, type RunningEnvServer } from '../../process/envServer';
import { ENV_STAGES, PIPELINE, composeRunConfig, exportOnnxArgs, makeRunId, stageLabel, trainerArgs, trainerEnv } from '../../process/trainer';
import { configFromEvents, readRun, readRuns } from '../runs/model';
import { LABELS, PLACEHOLDERS, STAGE_PICKS, TITLES, checkpointLabel, looksLikeModelDir } from './picks';
import { absolutizeDataPaths, dataEntries } from '../../../core/data/paths';
import { modelDirProblem } from '../../../core/data/model';
import { runDataCheck } from '../../process/dataCheck';
import { applyDataPicks, describeData, hasPicks, type DataErrorLocation, type DataPicks } from './data';
import { pickDataFiles } from './dataPicks';

export interface TrainRequest {
  stage: string;
  /** Absolute or workspace-relative *.run.json; absent: the embedded default. */
  config?: string;
  /** HF model directory; absent: the embedded default model. */
  model?: string;
  /** Starting model directory (a stage's final/). */
  checkpoint?: string;
  /** Data files replacing the config's own (absolute paths). */
  data?: DataPicks;
  /** The embedded default model even though the config names model.path. */
  embeddedModel?: boolean;
}

interface ActiveRun {
  runDir: string;
  stage: string;
  proc: ManagedProcess;
  env?: RunningEnvServer;
}

const runsChanged = new vscode.EventEmitter<void>();
/** Fired when a run this extension started changes state (the Runs view refreshes). */
export const onRunsChanged = runsChanged.event;

let controller: TrainController | undefined;

export function registerTrain(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): TrainController {
  controller = new TrainController(context, log);
  context.subscriptions.push(controller, runsChanged);
  return controller;
}

export function trainController(): TrainController {
  if (!controller) throw new Error('CoA Studio is still activating');
  return controller;
}

/** Training, resuming, the environment server and ONNX export run code from the workspace: trusted only. */
export async function requireTrust(what: string): Promise<boolean> {
  if (vscode.workspace.isTrusted) return true;
  const pick = await vscode.window.showWarningMessage(
    `${what} is unavailable in an untrusted workspace: it runs the Python trainer and a local environment server with configs and code from this folder. Viewing runs, trajectories and panels still works.`,
    'Manage Workspace Trust',
  );
  if (pick) await vscode.commands.executeCommand('workbench.trust.manage');
  return false;
}

export function workspaceRoot(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

export class TrainController implements vscode.Disposable {
  private readonly active = new Map<string, ActiveRun>();
  private readonly status: vscode.StatusBarItem;

  constructor(private readonly context: vscode.ExtensionContext, private readonly log: vscode.LogOutputChannel) {
    this.status = vscode.window.createStatusBarItem('coaStudio.training', vscode.StatusBarAlignment.Left, 50);
    this.status.name = 'CoA Studio training';
  }

  dispose(): void {
    for (const run of this.active.values()) {
      void run.proc.cancel();
      void run.env?.stop();
    }
    this.status.dispose();
  }

  get running(): string[] {
    return [...this.active.keys()];
  }

  // ------------------------------------------------------------------ commands

  async trainStage(request?: TrainRequest): Promise<void> {
    if (!(await requireTrust('Training'))) return;
    const root = workspaceRoot();
    if (!root) return void vscode.window.showErrorMessage('CoA: Train Stage needs an open folder: runs are written to <folder>/runs/<id>.');
    const req = request?.stage ? request : await this.pickTrainRequest(root);
    if (!req) return;
    const userConfig = req.config ? this.readUserConfig(join(root, '.'), req.config) : null;
    if (userConfig === undefined) return;
    // runs/<id>/config.json is a copy: paths relative to the user's config file are made absolute first.
    let base = userConfig && req.config ? absolutizeDataPaths(userConfig, dirname(isAbsolute(req.config) ? req.config : join(root, req.config))) : userConfig;
    if (hasPicks(req.data)) base = applyDataPicks(base ?? {}, req.data);
    if (req.embeddedModel && base && typeof base.model === 'object' && base.model) base = { ...base, model: { ...base.model, path: null } };
    const runName = typeof base?.name === 'string' ? base.name : undefined;
    let runDir = join(root, 'runs', makeRunId(new Date(), req.stage, runName));
    for (let i = 2; existsSync(runDir); i++) runDir = join(root, 'runs', `${makeRunId(new Date(), req.stage, runName)}-${i}`);
    const config = composeRunConfig({
      base,
      stage: req.stage,
      modelPath: req.model ?? null,
      initFrom: req.checkpoint ?? null,
      cli: join(this.context.extensionPath, 'dist', 'cli.js'),
    });
    mkdirSync(runDir, { recursive: true });
    const configPath = join(runDir, 'config.json');
    writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
    if (dataEntries(config).length && !(await this.checkData(configPath, runDir))) return;
    await this.start(runDir, req.stage, configPath, false);
  }

  async resumeRun(runDir?: string, stage?: string): Promise<void> {
    this.log.info(`resume requested${runDir ? ` for ${runDir}` : ''}${stage ? ` (${stage})` : ''}`);
    if (!(await requireTrust('Resuming a run'))) return;
    const root = workspaceRoot();
    if (!root) return;
    if (!runDir) {
      const runs = readRuns(join(root, 'runs')).filter((r) => r.stages.length > 0);
      if (!runs.length) return void vscode.window.showInformationMessage('CoA: no run to resume (runs/<id>/config.json). Start one with "CoA: Train Stage".');
      const pick = await vscode.window.showQuickPick(runs.map((r) => ({ label: r.id, description: r.status, run: r })), { title: TITLES.resumeRun, placeHolder: PLACEHOLDERS.resumeRun, ignoreFocusOut: true });
      if (!pick) return void this.log.info('resume: no run picked');
      runDir = pick.run.dir;
    }
    const run = readRun(runDir, basename(runDir));
    if (!run) return void vscode.window.showErrorMessage(`CoA: ${runDir} is not a run directory (no events.jsonl).`);
    if (!stage) {
      const stages = run.stages.filter((s) => s.status !== 'ok' || s.checkpoints.some((c) => !c.final));
      const items = (stages.length ? stages : run.stages).map((s) => ({ label: s.name, description: `${s.status}${s.step !== null ? ` · step ${s.step}/${s.total ?? '?'}` : ''}` }));
      if (!run.stages.length) items.push({ label: PIPELINE.id, description: 'the whole pipeline' });
      const pick = await vscode.window.showQuickPick(items, { title: TITLES.resumeStage, placeHolder: PLACEHOLDERS.resumeStage, ignoreFocusOut: true });
      if (!pick) return void this.log.info('resume: no stage picked');
      stage = pick.label;
    }
    this.log.info(`resume: ${runDir} stage ${stage}`);
    const previous = this.active.get(runDir);
    if (previous && !previous.proc.cancelling) return void vscode.window.showWarningMessage(`CoA: ${basename(runDir)} is already running.`);
    if (previous) {
      // Cancelled a moment ago: the trainer is still writing its checkpoint. Resume once it has exited.
      this.log.info(`resume: waiting for the cancelled trainer of ${basename(runDir)} to exit`);
      await previous.proc.done;
      for (let i = 0; i < 100 && this.active.has(runDir); i++) await new Promise((r) => setTimeout(r, 100));
    }
    const configPath = join(runDir, 'config.json');
    if (!existsSync(configPath) && !recoverConfig(runDir, configPath)) {
      return void vscode.window.showErrorMessage(`CoA: cannot resume ${basename(runDir)}: no config.json and no run_started event to take the config from.`);
    }
    await this.start(runDir, stage, configPath, true);
  }

  async cancelRun(runDir?: string): Promise<void> {
    const dirs = runDir ? [runDir] : this.running;
    if (!dirs.length) return void vscode.window.showInformationMessage('CoA: no training run is in progress.');
    let dir = dirs[0];
    if (dirs.length > 1) {
      const pick = await vscode.window.showQuickPick(dirs.map((d) => basename(d)), { title: 'CoA: Cancel Run', placeHolder: 'Pick the run to cancel' });
      if (!pick) return;
      dir = dirs.find((d) => basename(d) === pick)!;
    }
    await this.active.get(dir)?.proc.cancel();
  }

  async runDemo(): Promise<void> {
    const demo = join(this.context.extensionPath, 'examples', 'embedded-demo.run.json');
    await this.trainStage({ stage: PIPELINE.id, config: existsSync(demo) ? demo : undefined });
  }

  async exportOnnx(finalDir: string): Promise<void> {
    if (!(await requireTrust('ONNX export'))) return;
    const out = join(finalDir, '..', 'onnx', 'model.onnx');
    const proc = new ManagedProcess({
      what: 'ONNX export',
      command: this.python(),
      args: exportOnnxArgs(finalDir, out),
      cwd: workspaceRoot(),
      env: this.childEnv(),
      log: this.log,
    });
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `CoA: exporting ${relative(workspaceRoot() ?? '', finalDir)} to ONNX`, cancellable: true },
      (_p, token) => {
        token.onCancellationRequested(() => void proc.cancel());
        return proc.done;
      },
    );
    if (result.status === 'ok') {
      const pick = await vscode.window.showInformationMessage(`CoA: exported ${out}`, 'Reveal');
      if (pick) await vscode.commands.executeCommand('revealInExplorer', vscode.Uri.file(out));
    } else if (result.status === 'failed') await this.showFailure(result.message);
    runsChanged.fire();
  }

  // ------------------------------------------------------------------ the run

  private python(): string {
    return resolvePython({
      setting: readConfig().python,
      workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
      extensionPath: this.context.extensionPath,
    }).path;
  }

  private childEnv(): NodeJS.ProcessEnv {
    return trainerEnv({ base: process.env, extensionPath: this.context.extensionPath, node: process.execPath });
  }

  private async start(runDir: string, stage: string, configPath: string, resume: boolean): Promise<void> {
    const runId = basename(runDir);
    const title = `CoA: ${resume ? 'resuming' : 'training'} ${stageLabel(stage)} (${runId})`;
    let env: RunningEnvServer | undefined;
    if (ENV_STAGES.includes(stage)) {
      env = await this.startEnvFor(runDir, configPath);
      if (!env) return;
    }
    let errorMessage: string | undefined;
    let reportProgress: ((message: string, increment?: number) => void) | undefined;
    let lastPct = 0;
    let lastLoss: number | null = null;
    this.status.text = `$(sync~spin) CoA ${stageLabel(stage)}: starting`;
    this.status.tooltip = `${title}\nClick to open the live panel`;
    this.status.command = { title: 'Open live panel', command: 'coaStudio.openLivePanel', arguments: [vscode.Uri.file(runDir)] };
    this.status.show();
    const onEvent = (line: string): void => {
      const parsed = parseEvent(line);
      if (!parsed.ok) return;
      const e = parsed.event;
      if (e.type === 'metrics' && typeof e.values.loss === 'number') lastLoss = e.values.loss;
      if (e.type === 'progress') {
        const pct = e.total ? (100 * e.step) / e.total : 0;
        const eta = e.eta_s !== null ? ` · ETA ${formatDuration(e.eta_s)}` : '';
        const loss = lastLoss !== null ? ` · loss ${lastLoss.toFixed(3)}` : '';
        this.status.text = `$(sync~spin) CoA ${stageLabel(e.stage)} ${e.step}/${e.total}${eta}`;
        reportProgress?.(`${stageLabel(e.stage)} step ${e.step}/${e.total}${loss}${eta}`, Math.max(0, pct - lastPct));
        lastPct = pct;
      } else if (e.type === 'run_started') {
        lastPct = 0;
        reportProgress?.(`${stageLabel(e.stage)}: started on ${e.device}${e.resumed_from ? ` (resumed at step ${e.resumed_from})` : ''}`);
        runsChanged.fire();
      } else if (e.type === 'stage_finished' || e.type === 'checkpoint' || e.type === 'eval') runsChanged.fire();
      else if (e.type === 'error') errorMessage = e.message;
      else if (e.type === 'alert') this.log.warn(`alert ${e.kind} at ${e.stage} step ${e.step}: ${e.message}`);
    };

    const proc = new ManagedProcess({
      what: 'trainer',
      command: this.python(),
      args: trainerArgs({ stage, config: configPath, runDir, resume, env: env && { url: env.url, token: env.token } }),
      cwd: workspaceRoot(),
      env: this.childEnv(),
      log: this.log,
      secrets: env ? [env.token] : [],
      graceMs: readConfig().cancelGraceSeconds * 1000, // the trainer saves a checkpoint on SIGTERM
      onJson: (_v, line) => onEvent(line),
    });
    this.active.set(runDir, { runDir, stage, proc, env });
    runsChanged.fire();
    // The live panel is another engineer's feature: open it when it is there.
    const commands = await vscode.commands.getCommands(true);
    if (readConfig().openLivePanelOnStart && commands.includes('coaStudio.openLivePanel')) void vscode.commands.executeCommand('coaStudio.openLivePanel', vscode.Uri.file(runDir));

    // The command returns once the trainer is spawned; the notification follows the run to its end.
    const ended = vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      (progress, token) => {
        reportProgress = (message, increment) => progress.report({ message, increment });
        token.onCancellationRequested(() => {
          reportProgress?.('cancelling: saving a checkpoint…');
          void proc.cancel();
        });
        return proc.done;
      },
    );
    void Promise.resolve(ended)
      .then((result) => this.ended(result, { runDir, stage, env, errorMessage: () => errorMessage }))
      .catch((e: unknown) => this.log.error(`run ${runId}: ${(e as Error).stack ?? e}`));
  }

  private async ended(result: ProcessResult, run: { runDir: string; stage: string; env?: RunningEnvServer; errorMessage: () => string | undefined }): Promise<void> {
    const { runDir, stage, env } = run;
    const runId = basename(runDir);
    await env?.stop();
    this.active.delete(runDir);
    if (this.active.size === 0) this.status.hide();
    runsChanged.fire();
    if (result.status === 'ok') {
      const pick = await vscode.window.showInformationMessage(`CoA: ${stageLabel(stage)} finished (${runId}).`, 'Open Live Panel');
      if (pick) await vscode.commands.executeCommand('coaStudio.openLivePanel', vscode.Uri.file(runDir));
    } else if (result.status === 'cancelled') {
      const pick = await vscode.window.showInformationMessage(`CoA: ${stageLabel(stage)} cancelled (${runId}); the trainer saved a checkpoint.`, 'Resume Run');
      if (pick) await this.resumeRun(runDir, stage);
    } else {
      // The trainer's own error event says what was wrong more precisely than an exit code.
      const errorMessage = run.errorMessage();
      const message = errorMessage && result.kind === 'crash' ? `The trainer stopped: ${errorMessage}` : result.message;
      await this.showFailure(message, runDir, stage);
    }
  }

  /**
   * `coa data check` on the run's config; false when it fails: the new run directory (only the config just
   * written) is removed and the error, naming the file, is shown without waiting for the user.
   */
  private async checkData(configPath: string, runDir: string): Promise<boolean> {
    const abort = new AbortController();
    const outcome = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'CoA: checking the run\'s data and model', cancellable: true },
      (_p, token) => {
        token.onCancellationRequested(() => abort.abort());
        return runDataCheck({ node: process.execPath, cli: join(this.context.extensionPath, 'dist', 'cli.js'), config: configPath, env: this.childEnv(), signal: abort.signal });
      },
    );
    if (outcome.ok) {
      for (const f of outcome.result.files) this.log.info(`data check: ${f.key} ${f.path}: ${f.count}${f.summary ? ` ${JSON.stringify(f.summary)}` : ''}`);
      if (outcome.result.built_pairs) this.log.info(`data check: SFT-1 pairs from data.sft: ${JSON.stringify(outcome.result.built_pairs)}`);
      return true;
    }
    rmSync(runDir, { recursive: true, force: true });
    if (outcome.cancelled) return false;
    this.log.error(`data check: ${outcome.message}`);
    void this.showDataError(outcome.message, outcome.location, configPath);
    return false;
  }

  private async showDataError(message: string, loc: DataErrorLocation | null, configPath: string): Promise<void> {
    // An error inside the run's own config copy is the user's config's error; the copy is removed.
    const openable = loc && loc.file !== configPath && !/\.parquet$/i.test(loc.file) && existsSync(loc.file);
    const pick = await vscode.window.showErrorMessage(`CoA: the run's data did not pass the check, nothing was started: ${message}`, ...(openable ? ['Open File'] : []), 'Show Log');
    if (pick === 'Show Log') this.log.show();
    if (pick === 'Open File' && loc) {
      const pos = new vscode.Position(loc.line - 1, loc.column - 1);
      await vscode.window.showTextDocument(vscode.Uri.file(loc.file), { selection: new vscode.Range(pos, pos) });
    }
  }

  private async startEnvFor(runDir: string, configPath: string): Promise<RunningEnvServer | undefined> {
    if (!(await requireTrust('The environment server'))) return undefined;
    let config: Record<string, any> = {};
    try {
      config = JSON.parse(readFileSync(configPath, 'utf8'));
    } catch {
      /* the trainer reports a bad config itself */
    }
    const dataDir = config.benchmark?.data_dir ?? join(runDir, 'data');
    const corpus: string = config.data?.corpus ?? config.env?.corpus ?? join(dataDir, 'corpus.jsonl');
    if (!existsSync(corpus)) {
      // The embedded benchmark (and its search corpus) is written by `coa_trainer data`: make it first.
      const data = new ManagedProcess({
        what: 'benchmark writer',
        command: this.python(),
        args: ['-m', 'coa_trainer', 'data', '--config', configPath, '--out', dataDir],
        cwd: workspaceRoot(),
        env: this.childEnv(),
        log: this.log,
      });
      const r = await data.done;
      if (r.status !== 'ok' || !existsSync(corpus)) {
        await this.showFailure(r.message || `CoA: the search corpus ${corpus} is missing; set env.corpus in the run config.`);
        return undefined;
      }
    }
    try {
      return await startEnvServer({
        node: process.execPath,
        cli: join(this.context.extensionPath, 'dist', 'cli.js'),
        corpus,
        dialect: config.dialect,
        log: this.log,
        env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
      });
    } catch (e) {
      await this.showFailure((e as Error).message);
      return undefined;
    }
  }

  private async showFailure(message: string, runDir?: string, stage?: string): Promise<void> {
    const actions = runDir ? ['Show Log', 'Resume Run'] : ['Show Log'];
    const pick = await vscode.window.showErrorMessage(`CoA: ${message}`, ...actions);
    if (pick === 'Show Log') this.log.show();
    if (pick === 'Resume Run' && runDir) await this.resumeRun(runDir, stage);
  }

  // ------------------------------------------------------------------ picks

  /** Reads a *.run.json (JSON with comments allowed); reports errors with line:column. undefined = failed. */
  private readUserConfig(root: string, path: string): Record<string, unknown> | undefined {
    const abs = path.startsWith('/') || /^[A-Za-z]:[\\/]/.test(path) ? path : join(root, path);
    let text: string;
    try {
      text = readFileSync(abs, 'utf8');
    } catch (e) {
      void vscode.window.showErrorMessage(`CoA: cannot read ${abs}: ${(e as Error).message}`);
      return undefined;
    }
    const errors: ParseError[] = [];
    const value = parseJsonc(text, errors, { allowTrailingComma: true });
    if (errors.length || !value || typeof value !== 'object' || Array.isArray(value)) {
      const at = errors[0]?.offset ?? 0;
      const before = text.slice(0, at).split('\n');
      const where = `${abs}:${before.length}:${before[before.length - 1].length + 1}`;
      void vscode.window.showErrorMessage(`CoA: ${where}: ${errors.length ? printParseErrorCode(errors[0].error) : 'the run config must be a JSON object'}`);
      return undefined;
    }
    return value as Record<string, unknown>;
  }

  private async pickTrainRequest(root: string): Promise<TrainRequest | undefined> {
    const stage = await vscode.window.showQuickPick(STAGE_PICKS.map((s) => ({ ...s })), { title: TITLES.stage, placeHolder: PLACEHOLDERS.stage, ignoreFocusOut: true });
    if (!stage) return undefined;

    const files = await vscode.workspace.findFiles('**/*.run.json', '{**/node_modules/**,**/runs/**}', 200);
    const configItems = [
      { label: LABELS.embeddedConfig, description: 'every setting at its default', path: undefined as string | undefined },
      ...files.map((f) => ({ label: relative(root, f.fsPath), description: '', path: f.fsPath })).sort((a, b) => a.label.localeCompare(b.label)),
      { label: LABELS.ownData, description: 'question sets, SFT trajectories, a corpus (default settings otherwise)', path: undefined as string | undefined },
    ];
    const config = await vscode.window.showQuickPick(configItems, { title: TITLES.config, placeHolder: PLACEHOLDERS.config, ignoreFocusOut: true });
    if (!config) return undefined;

    // The config's data and model are offered as they are, with the option to choose other files.
    const chosen = config.path ? this.readUserConfig(root, config.path) : null;
    if (chosen === undefined) return undefined;
    let data: DataPicks | undefined;
    if (config.label === LABELS.ownData) {
      data = await pickDataFiles(null);
      if (!data) return undefined;
    } else if (chosen && describeData(chosen)) {
      const dataPick = await vscode.window.showQuickPick(
        [{ label: LABELS.configData, description: describeData(chosen)! }, { label: LABELS.changeData, description: 'questions, trajectories, pairs, corpus' }],
        { title: TITLES.data, placeHolder: 'Train on the data the run config names, or choose other files', ignoreFocusOut: true },
      );
      if (!dataPick) return undefined;
      if (dataPick.label === LABELS.changeData) {
        data = await pickDataFiles(absolutizeDataPaths(chosen, dirname(config.path!)));
        if (!data) return undefined;
      }
    }

    const configModel = chosen ? dataEntries(chosen).find((e) => e.kind === 'model') : undefined;
    const modelPick = await vscode.window.showQuickPick(
      [
        ...(configModel ? [{ label: LABELS.configModel, description: configModel.path }] : []),
        { label: LABELS.embeddedModel, description: 'the small model trained from scratch on the embedded benchmark' },
        { label: LABELS.hfModel, description: 'a directory with config.json, a tokenizer and weights' },
      ],
      { title: TITLES.model, placeHolder: PLACEHOLDERS.model, ignoreFocusOut: true },
    );
    if (!modelPick) return undefined;
    let model: string | undefined;
    if (modelPick.label === LABELS.hfModel) {
      model = await this.browseModelDir('Use this model');
      if (!model) return undefined;
    }

    const finals = readRuns(join(root, 'runs')).flatMap((r) => r.stages.filter((s) => s.finalDir).map((s) => ({ label: checkpointLabel(r.id, s.name), description: s.step !== null ? `step ${s.step}` : '', path: s.finalDir! })));
    const ckpt = await vscode.window.showQuickPick(
      [{ label: LABELS.noCheckpoint, description: stage.id === 'pretrain' || stage.id === PIPELINE.id ? '' : 'the stage needs model.path or init_from in the config', path: '' }, ...finals, { label: LABELS.browseCheckpoint, description: 'a model directory', path: '' }],
      { title: TITLES.checkpoint, placeHolder: PLACEHOLDERS.checkpoint, ignoreFocusOut: true },
    );
    if (!ckpt) return undefined;
    let checkpoint: string | undefined = ckpt.path || undefined;
    if (ckpt.label === LABELS.browseCheckpoint) {
      checkpoint = await this.browseModelDir('Start from this checkpoint');
      if (!checkpoint) return undefined;
    }
    const embeddedModel = !!configModel && modelPick.label === LABELS.embeddedModel;
    return { stage: stage.id, config: config.path, model, checkpoint, data, ...(embeddedModel ? { embeddedModel } : {}) };
  }

  private async browseModelDir(openLabel: string): Promise<string | undefined> {
    const picked = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, canSelectMany: false, openLabel });
    const dir = picked?.[0]?.fsPath;
    if (!dir) return undefined;
    let files: string[] = [];
    try {
      files = readdirSync(dir);
    } catch {
      /* reported below */
    }
    const problem = modelDirProblem(dir);
    if (problem || !looksLikeModelDir(files)) {
      void vscode.window.showErrorMessage(`CoA: ${problem ?? `${dir} is not a Hugging Face model directory (config.json and *.safetensors / *.bin expected).`}`);
      return undefined;
    }
    return dir;
  }
}

/** A run started from a terminal has no runs/<id>/config.json: take it from its last run_started event. */
function recoverConfig(runDir: string, configPath: string): boolean {
  const config = configFromEvents(runDir);
  if (config) writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
  return config !== null;
}

function formatDuration(s: number): string {
  if (s < 60) return `${Math.round(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
