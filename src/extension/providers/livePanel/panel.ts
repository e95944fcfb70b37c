// One live training panel: a webview showing one or more runs, each followed by tailing its events.jsonl.
// The page is created with everything read so far embedded (first paint is complete); later events go in batches
// by postMessage, at most one message per run per BATCH_MS, once the page says it is listening.
import * as vscode from 'vscode';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventTail, followEvents, formatIssue, type Tail, type TailBatch } from '../../../core/eventTail';
import { isTensorBoardRunDir, TensorBoardTail } from '../../../core/tensorboard/runTail';
import type { TrainerEvent } from '../../../core/events';
import { webviewHtml } from '../../webview/html';
import { StepIndex } from '../../../core/lineIndex';
import {
  type HostToPanel,
  type LivePanelInitialState,
  type LivePanelRun,
  type PanelToHost,
  type RecordRef,
  type RolloutItem,
} from '../../../protocols/livePanel';
import type { RecordViews } from '../notebook/recordView';
import { chunk, flaggedOfStep, isSafeStageName, lineOfSample, rolloutsOfStep, sampleFromEvents } from './records';
import { isVerlMetricsUri, type VerlRunSource } from './externalRuns';
import { verlRunName } from '../../../core/verl/metrics';
import { verlTail } from '../../../core/verl/runTail';
import { verlStepItems } from '../../../core/importers/verl-rollouts';
import { safeName } from '../notebook/recordFile';

const BATCH_MS = 100;
/** Smoothing a new panel starts with (TensorBoard's default): raw values faint, the smoothed line solid. */
export const DEFAULT_SMOOTHING = 0.6;
const MAX_EVENTS_PER_MESSAGE = 5000;
/** Events embedded in the page at most; the rest follow as messages right after load. */
const MAX_EMBEDDED = 20000;

interface FollowedRun {
  info: LivePanelRun;
  /** The run directory, or verl's metrics file when `verl` is set. */
  dir: vscode.Uri;
  verl?: VerlRunSource;
  healthTimer?: ReturnType<typeof setInterval>;
  follower?: ReturnType<typeof followEvents>;
  pending: TrainerEvent[];
  reset: boolean;
}

export function runInfo(dir: vscode.Uri): LivePanelRun {
  return { key: dir.toString(), label: dir.path.split('/').filter(Boolean).pop() ?? dir.toString() };
}

/** A run directory, or a verl run (its metrics file, optionally with its dumps and tool-health URL). */
export type RunSource = vscode.Uri | VerlRunSource;

function newRun(source: RunSource): FollowedRun {
  if (source instanceof vscode.Uri && source.scheme === 'file' && isTensorBoardRunDir(source.fsPath)) {
    const info: LivePanelRun = { ...runInfo(source), engine: 'tensorboard' };
    return { info, dir: source, pending: [], reset: false };
  }
  if (source instanceof vscode.Uri && !isVerlMetricsUri(source))
    return { info: runInfo(source), dir: source, pending: [], reset: false };
  const verl: VerlRunSource = source instanceof vscode.Uri ? { metrics: source } : source;
  const info: LivePanelRun = { ...runInfo(verl.metrics), engine: 'verl', rolloutDir: verl.rolloutDir?.toString() };
  info.label = verlRunName(verl.metrics.fsPath);
  return { info, dir: verl.metrics, verl, pending: [], reset: false };
}

/** verl runs follow their metrics file through the verl adapter, TensorBoard runs their event files; ours follow
 * events.jsonl. */
function tailOf(run: FollowedRun): Tail {
  if (run.info.engine === 'tensorboard') return new TensorBoardTail(run.dir.fsPath, run.info.label);
  if (run.verl)
    return verlTail(run.verl.metrics.fsPath, { rolloutDir: run.verl.rolloutDir?.fsPath, run: run.info.label });
  return new EventTail(vscode.Uri.joinPath(run.dir, 'events.jsonl').fsPath);
}

/** What a panel reaches of the rest of the extension: record views, and "+" (add a run, picked, to the panel). */
export interface LivePanelHost {
  records: RecordViews;
  addRun(): Promise<void>;
  /** The GRPO group view of a step of a rollouts file (providers/groups). */
  openGroups(file: vscode.Uri, step: number): Promise<unknown>;
}

const sourceKey = (source: RunSource) => (source instanceof vscode.Uri ? source : source.metrics).toString();

export class LivePanel implements vscode.Disposable {
  private readonly runs = new Map<string, FollowedRun>();
  private ready = false;
  private readonly queue: HostToPanel[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  /** The stages' record files by step, kept up to date as they grow (one per file this panel has read). */
  private readonly indexes = new Map<string, StepIndex>();
  /** Events posted to the page (plus those embedded in it). */
  sent = 0;
  smoothing = DEFAULT_SMOOTHING;
  onDidDispose?: () => void;

  constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly extensionUri: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
    private readonly host: LivePanelHost,
  ) {
    panel.webview.options = {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist', 'webview')],
    };
    this.disposables.push(
      panel.webview.onDidReceiveMessage((m: PanelToHost) => void this.onMessage(m)),
      panel.onDidDispose(() => this.dispose()),
    );
  }

  /** Sets the page with `dirs` embedded, then follows them. */
  async show(dirs: RunSource[], smoothing = DEFAULT_SMOOTHING): Promise<void> {
    this.smoothing = smoothing;
    this.ready = false; // a new page: wait for its 'ready'
    this.queue.length = 0;
    const initial: LivePanelInitialState = { runs: [], events: {}, smoothing };
    const overflow: { run: FollowedRun; events: TrainerEvent[] }[] = [];
    for (const dir of dirs) {
      if (this.runs.has(sourceKey(dir))) continue;
      const run = newRun(dir);
      this.runs.set(run.info.key, run);
      initial.runs.push(run.info);
      const tail = tailOf(run);
      const first = await tail.read();
      this.reportIssues(run, first);
      initial.events[run.info.key] = first.events.slice(0, MAX_EMBEDDED);
      if (first.events.length > MAX_EMBEDDED) overflow.push({ run, events: first.events.slice(MAX_EMBEDDED) });
      this.sent += initial.events[run.info.key].length;
      this.follow(run, tail);
    }
    for (const { run, events } of overflow) run.pending.push(...events);
    this.panel.title = this.title();
    this.panel.webview.html = webviewHtml(
      this.panel.webview,
      this.extensionUri,
      {
        title: 'CoA live training',
        scripts: ['dist/webview/live-panel.js'],
        styles: ['dist/webview/live-panel.css'],
        initialState: initial,
      },
      (base, p) => vscode.Uri.joinPath(base, p),
    );
  }

  /** Adds a run to compare (the page is live: it gets an addRun message and the run's events). */
  async addRun(dir: RunSource): Promise<void> {
    if (this.runs.has(sourceKey(dir))) return;
    const run = newRun(dir);
    this.runs.set(run.info.key, run);
    this.panel.title = this.title();
    this.post({ type: 'addRun', run: run.info });
    this.follow(run, tailOf(run));
  }

  has(dir: RunSource): boolean {
    return this.runs.has(sourceKey(dir));
  }

  private title(): string {
    const labels = [...this.runs.values()].map((r) => r.info.label);
    return `CoA Live: ${labels[0] ?? ''}${labels.length > 1 ? ` +${labels.length - 1}` : ''}`;
  }

  private follow(run: FollowedRun, tail: Tail): void {
    if (run.verl?.toolHealthUrl) this.pollToolHealth(run, run.verl.toolHealthUrl);
    run.follower = followEvents(tail, {
      intervalMs: 500,
      onBatch: (batch) => {
        this.reportIssues(run, batch);
        if (batch.reset) {
          run.pending = [];
          run.reset = true;
        }
        run.pending.push(...batch.events);
        this.scheduleFlush();
      },
    });
  }

  /** Polls the environment server's tool health every 2 s while the run is shown (loopback only, token in the path). */
  private pollToolHealth(run: FollowedRun, url: string): void {
    const poll = async () => {
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(1500) });
        const body = (await res.json()) as { callers?: Record<string, never>; error?: { message?: string } };
        if (!res.ok) throw new Error(body.error?.message ?? `HTTP ${res.status}`);
        this.post({ type: 'toolHealth', run: run.info.key, callers: body.callers ?? {} });
      } catch (e) {
        this.post({
          type: 'toolHealth',
          run: run.info.key,
          callers: {},
          error: `tool health unavailable: ${(e as Error).message}`,
        });
      }
    };
    void poll();
    run.healthTimer = setInterval(() => void poll(), 2000);
  }

  private reportIssues(run: FollowedRun, batch: TailBatch): void {
    if (!batch.issues.length) return;
    for (const i of batch.issues) this.log.warn(`live panel: skipped a malformed event: ${formatIssue(i)}`);
    this.post({ type: 'issues', run: run.info.key, issues: batch.issues });
  }

  private scheduleFlush(): void {
    if (this.flushTimer || !this.ready) return;
    this.flushTimer = setTimeout(() => this.flush(), BATCH_MS);
  }

  private flush(): void {
    this.flushTimer = undefined;
    if (!this.ready) return;
    for (const run of this.runs.values()) {
      if (!run.pending.length && !run.reset) continue;
      const events = run.pending;
      run.pending = [];
      const batches = events.length ? chunk(events, MAX_EVENTS_PER_MESSAGE) : [[]];
      batches.forEach((b, i) =>
        this.post({ type: 'events', run: run.info.key, events: b, reset: i === 0 && run.reset ? true : undefined }),
      );
      run.reset = false;
      this.sent += events.length;
    }
  }

  private post(message: HostToPanel): void {
    // Before 'ready' the page cannot listen yet: keep the message (events wait in their runs' pending lists).
    if (this.ready) void this.panel.webview.postMessage(message);
    else this.queue.push(message);
  }

  private async onMessage(m: PanelToHost): Promise<void> {
    switch (m?.type) {
      case 'ready':
        this.ready = true;
        for (const q of this.queue.splice(0)) this.post(q);
        this.scheduleFlush();
        return;
      case 'addRun':
        await this.host.addRun();
        return;
      case 'removeRun': {
        const run = this.runs.get(m.run);
        if (!run || this.runs.size <= 1) return;
        run.follower?.dispose();
        if (run.healthTimer) clearInterval(run.healthTimer);
        this.runs.delete(m.run);
        this.panel.title = this.title();
        this.post({ type: 'removeRun', run: m.run });
        return;
      }
      case 'stepRollouts': {
        const run = this.runs.get(m.run);
        if (!run || !Number.isInteger(m.step)) return;
        const answer =
          run.info.engine === 'tensorboard'
            ? { items: [], total: 0, error: 'a TensorBoard run holds scalars only: no rollouts' }
            : run.verl
              ? await listVerlStep(run.verl, m.step)
              : await this.listStepRollouts(run.dir, m.stage, m.step);
        // What the scanners flagged at the step clicked (written every step, not only where rollouts are sampled).
        const flaggedStep = Number.isInteger(m.clicked) ? m.clicked! : m.step;
        const flagged =
          run.verl || run.info.engine === 'tensorboard' || !isSafeStageName(m.stage)
            ? undefined
            : await flaggedOfStep(this.index(stageFile(run.dir, m.stage, 'flagged')), flaggedStep);
        this.post({
          type: 'rollouts',
          run: m.run,
          stage: m.stage,
          step: m.step,
          ...answer,
          ...(flagged ? { flagged, flaggedStep } : {}),
        });
        return;
      }
      case 'openRollout':
        await this.openRef(m.ref);
        return;
      case 'openGroups': {
        const run = this.runs.get(m.run);
        if (!run || run.verl || !isSafeStageName(m.stage) || !Number.isInteger(m.step)) return;
        await this.host.openGroups(stageFile(run.dir, m.stage, 'rollouts'), m.step);
        return;
      }
      case 'openSample': {
        const run = this.runs.get(m.run);
        if (!run || run.verl || !Number.isInteger(m.step)) return;
        await this.openSample(run.dir, String(m.stage), m.step, String(m.id));
        return;
      }
    }
  }

  /** The line index of one of the stages' files, kept for the panel's life (it follows the file as it grows). */
  private index(file: vscode.Uri): StepIndex {
    let index = this.indexes.get(file.fsPath);
    if (!index) this.indexes.set(file.fsPath, (index = new StepIndex(file.fsPath)));
    return index;
  }

  /** The rollouts a stage wrote at one step, from its rollouts file's line index (the file may be large). */
  private async listStepRollouts(
    runDir: vscode.Uri,
    stage: string,
    step: number,
  ): Promise<{ items: RolloutItem[]; total: number; error?: string }> {
    if (!isSafeStageName(stage)) return { items: [], total: 0, error: `not a stage name: ${JSON.stringify(stage)}` };
    const file = stageFile(runDir, stage, 'rollouts');
    try {
      const answer = await rolloutsOfStep(this.index(file), step);
      if (!answer.total && !(await exists(file)))
        return { ...answer, error: `${stage} wrote no rollouts file (stages/${stage}/rollouts.coa.jsonl)` };
      return answer;
    } catch (e) {
      return { items: [], total: 0, error: `cannot read ${file.fsPath}: ${(e as Error).message}` };
    }
  }

  /** Opens a referenced record in the record view, beside the panel (the charts stay in view), whatever the size of
   * its file: where its line is comes from the file's line index. */
  private async openRef(ref: RecordRef): Promise<void> {
    const run = this.runs.get(ref?.run);
    if (
      !run ||
      !isSafeStageName(ref.stage) ||
      !Number.isInteger(ref.line) ||
      ref.line < 0 ||
      !Number.isInteger(ref.step)
    )
      return;
    if (ref.file !== 'rollouts' && ref.file !== 'flagged') return;
    if (run.verl) {
      if (!run.verl.rolloutDir || ref.file !== 'rollouts') return;
      await this.host.records.show(
        { file: vscode.Uri.joinPath(run.verl.rolloutDir, `${ref.step}.jsonl`), line: ref.line + 1 },
        { viewColumn: vscode.ViewColumn.Beside },
      );
      return;
    }
    const file = stageFile(run.dir, ref.stage, ref.file);
    const at = await this.index(file)
      .locate(ref.line)
      .catch(() => undefined);
    await this.host.records.show(
      { file, line: ref.line + 1, ...(at ? { offset: at.offset, length: at.length } : {}) },
      { viewColumn: vscode.ViewColumn.Beside },
    );
  }

  /**
   * Opens a sampled rollout in the record view: its line in the stage's rollouts file (found by step and id through
   * the file's index), else — a stage that keeps no rollouts file holding it — the record of the `sample` event read
   * back from events.jsonl, written to a file of its own in a temp folder (an untitled notebook would lose its reward
   * output).
   */
  private async openSample(runDir: vscode.Uri, stage: string, step: number, id: string): Promise<void> {
    const beside = { viewColumn: vscode.ViewColumn.Beside };
    if (!isSafeStageName(stage))
      return void this.log.warn(`live panel: ignored a rollout with an unexpected stage name ${JSON.stringify(stage)}`);
    const file = stageFile(runDir, stage, 'rollouts');
    const line = await lineOfSample(this.index(file), step, id).catch(() => undefined);
    if (line !== undefined) return this.openRef({ run: runDir.toString(), stage, file: 'rollouts', step, line });
    const record = await sampleFromEvents(vscode.Uri.joinPath(runDir, 'events.jsonl').fsPath, stage, step, id);
    if (record === undefined)
      return void vscode.window.showWarningMessage(
        `CoA: ${id} (${stage}, step ${step}) is in neither the stage's rollouts nor the run's events.`,
      );
    const dir = mkdtempSync(join(tmpdir(), 'coa-studio-sample-'));
    const out = join(dir, `${safeName(id)}.coa.jsonl`);
    writeFileSync(out, JSON.stringify(record) + '\n');
    await this.host.records.show({ file: vscode.Uri.file(out), line: 1 }, beside);
  }

  dispose(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    for (const run of this.runs.values()) {
      run.follower?.dispose();
      if (run.healthTimer) clearInterval(run.healthTimer);
    }
    this.runs.clear();
    this.indexes.clear();
    for (const d of this.disposables.splice(0)) d.dispose();
    this.onDidDispose?.();
  }
}

/** The rows of a verl step's dump (`<rollout_data_dir>/<step>.jsonl`). */
async function listVerlStep(
  verl: VerlRunSource,
  step: number,
): Promise<{ items: RolloutItem[]; total: number; error?: string }> {
  if (!verl.rolloutDir)
    return {
      items: [],
      total: 0,
      error: 'no rollout dump directory known for this verl run (trainer.rollout_data_dir)',
    };
  const file = vscode.Uri.joinPath(verl.rolloutDir, `${step}.jsonl`);
  try {
    return verlStepItems(new TextDecoder().decode(await vscode.workspace.fs.readFile(file)));
  } catch {
    return {
      items: [],
      total: 0,
      error: `verl dumped no rollouts at step ${step} (${vscode.workspace.asRelativePath(file)})`,
    };
  }
}

/** A stage's record file: its rollouts, or what the reward-hacking scanners flagged. */
const stageFile = (runDir: vscode.Uri, stage: string, file: RecordRef['file']) =>
  vscode.Uri.joinPath(runDir, 'stages', stage, `${file}.coa.jsonl`);

async function exists(file: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(file);
    return true;
  } catch {
    return false;
  }
}
