// The Runs view (activity bar "CoA Studio" → Runs): runs/<id> of the first workspace folder as run → stages →
// checkpoints / evals / rollouts, from the pure model in ./model.ts. Refreshed by a FileSystemWatcher on
// runs/*/events.jsonl (runs started from a terminal show up too) and when this extension's runs change.
import * as vscode from 'vscode';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { readRuns, resumable, runNode, stageChildren, stageNodes, type RunNode, type Status } from './model';
import { stageLabel } from '../../process/trainer';
import type { TrainController } from '../train';
import type { LivePanels } from '../livePanel/register';
import { workspaceRoot } from '../../workspace';
import { dataFileNodes, dataNode, type DataNode } from './data';
import { findTensorBoardRuns, findVerlMetricsFiles } from '../livePanel/externalRuns';
import { verlRunName } from '../../../core/verl/metrics';

/** A verl metrics file found in the workspace: a run CoA Studio did not start. */
type VerlNode = { kind: 'verl'; id: string; uri: vscode.Uri };
/** A folder of TensorBoard event files found in the workspace (another trainer's run). */
type TensorBoardNode = { kind: 'tensorboard'; id: string; uri: vscode.Uri };
/** Run nodes plus the "data" node under each run (which data and model it used), verl and TensorBoard runs. */
type Node = RunNode | DataNode | VerlNode | TensorBoardNode;

const ICONS: Record<Status, [string, string | undefined]> = {
  running: ['sync~spin', 'charts.blue'],
  ok: ['pass', 'testing.iconPassed'],
  cancelled: ['debug-pause', 'charts.yellow'],
  failed: ['error', 'testing.iconFailed'],
  pending: ['circle-outline', undefined],
};

export class RunsProvider implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private timer: NodeJS.Timeout | undefined;

  dispose(): void {
    this.changed.dispose();
    if (this.timer) clearTimeout(this.timer);
  }

  /** Coalesces bursts (a trainer appends many events a second). */
  refresh(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.changed.fire(undefined);
    }, 1000);
  }

  async getChildren(node?: Node): Promise<Node[]> {
    const root = workspaceRoot();
    if (!root) return [];
    if (!node) {
      const [verl, tensorboard] = await Promise.all([
        findVerlMetricsFiles().catch(() => []),
        findTensorBoardRuns().catch(() => []),
      ]);
      return [
        ...readRuns(join(root, 'runs')).map((r) => runNode(r, stageLabel)),
        ...verl.map((uri): VerlNode => ({ kind: 'verl', id: `verl:${uri.toString()}`, uri })),
        ...tensorboard.map(
          (uri): TensorBoardNode => ({ kind: 'tensorboard', id: `tensorboard:${uri.toString()}`, uri }),
        ),
      ];
    }
    if (node.kind === 'run') {
      const data = dataNode(node.run);
      return [...stageNodes(node.run, stageLabel), ...(data ? [data] : [])];
    }
    if (node.kind === 'data') return dataFileNodes(node);
    if (node.kind === 'stage') return stageChildren(node.run, node.stage);
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'data' || node.kind === 'dataFile') return dataItem(node);
    if (node.kind === 'verl') {
      const item = new vscode.TreeItem(verlRunName(node.uri.fsPath), vscode.TreeItemCollapsibleState.None);
      item.id = node.id;
      item.description = `verl · ${vscode.workspace.asRelativePath(node.uri)}`;
      item.tooltip = `verl metrics file (trainer.logger file): ${node.uri.fsPath}`;
      item.iconPath = new vscode.ThemeIcon('graph');
      item.contextValue = 'coaRun.verl';
      item.resourceUri = node.uri;
      item.command = { title: 'Watch in the live panel', command: 'coaStudio.watchRun', arguments: [node.uri] };
      return item;
    }
    if (node.kind === 'tensorboard') {
      const item = new vscode.TreeItem(node.uri.path.split('/').pop()!, vscode.TreeItemCollapsibleState.None);
      item.id = node.id;
      item.description = `TensorBoard · ${vscode.workspace.asRelativePath(node.uri)}`;
      item.tooltip = `TensorBoard event files (events.out.tfevents.*): ${node.uri.fsPath}`;
      item.iconPath = new vscode.ThemeIcon('graph-line');
      item.contextValue = 'coaRun.tensorboard';
      item.command = { title: 'Watch in the live panel', command: 'coaStudio.watchRun', arguments: [node.uri] };
      return item;
    }
    const collapsible =
      node.kind === 'run'
        ? vscode.TreeItemCollapsibleState.Collapsed
        : node.kind === 'stage' && stageChildren(node.run, node.stage).length
          ? vscode.TreeItemCollapsibleState.Collapsed
          : vscode.TreeItemCollapsibleState.None;
    const item = new vscode.TreeItem(node.label, collapsible);
    item.id = node.id;
    item.description = node.description;
    // contextValue drives the inline/context menus in package.json (view/item/context).
    if (node.kind === 'run' || node.kind === 'stage') {
      const [icon, color] = ICONS[node.status];
      item.iconPath = new vscode.ThemeIcon(icon, color ? new vscode.ThemeColor(color) : undefined);
      // `.resumable`: Resume Run is offered only where a checkpoint exists to resume from (package.json menus).
      const canResume = node.kind === 'stage' ? resumable(node.stage) : node.run.stages.some(resumable);
      item.contextValue = `coaRun.${node.kind}.${node.status}${canResume ? '.resumable' : ''}`;
      item.tooltip =
        node.kind === 'stage' && node.stage.error ? `${node.label}: ${node.stage.error}` : `${node.run.dir}`;
      // No resourceUri on runs: VS Code would decorate the run with the problems of the files under its folder, so
      // a rollout file's format errors (the model's, not the run's) turned a finished run red with "9+".
    } else if (node.kind === 'checkpoint') {
      item.iconPath = new vscode.ThemeIcon(node.final || node.external ? 'package' : 'save');
      // an engine's checkpoint (TRL's checkpoint-N) is a model directory: the model actions, not Resume
      item.contextValue = node.final || node.external ? 'coaRun.final' : 'coaRun.checkpoint';
      item.tooltip = node.path;
      item.resourceUri = vscode.Uri.file(node.path);
    } else if (node.kind === 'eval') {
      item.iconPath = new vscode.ThemeIcon('graph');
      item.contextValue = 'coaRun.eval';
    } else {
      item.iconPath = new vscode.ThemeIcon('notebook');
      item.contextValue = 'coaRun.rollouts';
      // Nor on rollouts: format errors in them are what the model wrote, not a failure of the run (see above).
      item.command = { title: 'Open rollouts', command: 'vscode.open', arguments: [vscode.Uri.file(node.path)] };
    }
    return item;
  }
}

function dataItem(node: DataNode): vscode.TreeItem {
  if (node.kind === 'data') {
    const item = new vscode.TreeItem(
      node.label,
      node.entries.length ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
    );
    item.id = node.id;
    item.description = node.description;
    item.tooltip = node.tooltip;
    item.iconPath = new vscode.ThemeIcon('database');
    item.contextValue = 'coaRun.data';
    return item;
  }
  const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
  item.id = node.id;
  item.description = node.description;
  item.tooltip = node.path;
  item.resourceUri = vscode.Uri.file(node.path);
  item.contextValue = 'coaRun.dataFile';
  item.iconPath = new vscode.ThemeIcon(node.entry.kind === 'model' ? 'package' : 'file');
  // JSONL opens in the editor (trajectory files in the notebook); parquet and model directories are revealed.
  item.command = /\.jsonl?$/i.test(node.path)
    ? { title: 'Open', command: 'vscode.open', arguments: [vscode.Uri.file(node.path)] }
    : { title: 'Reveal', command: 'revealInExplorer', arguments: [vscode.Uri.file(node.path)] };
  return item;
}

export function registerRuns(context: vscode.ExtensionContext, train: TrainController): RunsProvider {
  const provider = new RunsProvider();
  const view = vscode.window.createTreeView('coaStudio.runs', { treeDataProvider: provider, showCollapseAll: true });
  const watcher = vscode.workspace.createFileSystemWatcher('**/runs/*/events.jsonl');
  // verl metrics files appear anywhere ($VERL_FILE_LOGGER_ROOT/<project>/<experiment>.jsonl): new ones are looked for.
  const jsonl = vscode.workspace.createFileSystemWatcher('**/*.jsonl', false, true, false);
  // TensorBoard runs: a new folder of event files (a writer's first file) is looked for too.
  const tfevents = vscode.workspace.createFileSystemWatcher('**/events.out.tfevents.*', false, true, false);
  const refresh = () => provider.refresh();
  context.subscriptions.push(
    provider,
    view,
    watcher,
    jsonl,
    tfevents,
    watcher.onDidCreate(refresh),
    watcher.onDidChange(refresh),
    watcher.onDidDelete(refresh),
    jsonl.onDidCreate(refresh),
    jsonl.onDidDelete(refresh),
    tfevents.onDidCreate(refresh),
    tfevents.onDidDelete(refresh),
    train.onRunsChanged(refresh),
  );
  return provider;
}

// ------------------------------------------------------------------ actions (command table entries)

const runDirOf = (node: unknown): string | undefined =>
  node && typeof node === 'object' && 'run' in node ? (node as RunNode).run.dir : undefined;

export async function openRunPanel(livePanels: LivePanels, node?: unknown): Promise<void> {
  const dir = runDirOf(node);
  await livePanels.open(dir ? vscode.Uri.file(dir) : undefined);
}

export async function openRollouts(node?: unknown): Promise<void> {
  const n = node as RunNode | undefined;
  const path = n?.kind === 'rollouts' ? n.path : n?.kind === 'stage' ? n.stage.rollouts : undefined;
  if (!path)
    return void vscode.window.showInformationMessage(
      'CoA: this stage has no rollouts file (stages/<stage>/rollouts.coa.jsonl).',
    );
  await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(path));
}

/** From the tree (a node), or scripted: a run directory path, or { runDir, stage }. */
export async function resumeFromNode(train: TrainController, node?: unknown): Promise<void> {
  if (typeof node === 'string') return train.resumeRun(node);
  const o = node as { runDir?: string; stage?: string } | undefined;
  if (o && typeof o.runDir === 'string') return train.resumeRun(o.runDir, o.stage);
  const n = node as RunNode | undefined;
  await train.resumeRun(runDirOf(n), n && n.kind !== 'run' ? n.stage.name : undefined);
}

export async function cancelFromNode(train: TrainController, node?: unknown): Promise<void> {
  await train.cancelRun(runDirOf(node));
}

export async function exportOnnxFromNode(train: TrainController, node?: unknown): Promise<void> {
  const n = node as RunNode | undefined;
  const finalDir = n?.kind === 'checkpoint' && n.final ? n.path : n?.kind === 'stage' ? n.stage.finalDir : undefined;
  if (!finalDir)
    return void vscode.window.showInformationMessage(
      'CoA: pick a stage that finished (it has a final/ model directory) to export to ONNX.',
    );
  await train.exportOnnx(finalDir);
}

export async function revealRun(node?: unknown): Promise<void> {
  const n = node as RunNode | undefined;
  const path = n?.kind === 'checkpoint' || n?.kind === 'rollouts' ? n.path : runDirOf(n);
  if (path) await vscode.commands.executeCommand('revealInExplorer', vscode.Uri.file(path));
}

export async function deleteRun(train: TrainController, runs: RunsProvider, node?: unknown): Promise<void> {
  const dir = runDirOf(node);
  if (!dir) return;
  if (train.running.includes(dir))
    return void vscode.window.showWarningMessage('CoA: cancel the run before deleting it.');
  const ok = await vscode.window.showWarningMessage(
    `Delete run ${(node as RunNode).run.id}? Its directory ${dir} (checkpoints, models, events) is removed permanently.`,
    { modal: true },
    'Delete',
  );
  if (ok !== 'Delete') return;
  rmSync(dir, { recursive: true, force: true });
  runs.refresh();
}
