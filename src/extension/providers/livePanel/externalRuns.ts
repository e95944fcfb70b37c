// Runs CoA Studio did not start, for the live panel and the Runs view: verl metrics files (verl's `file` logger,
// src/core/verl/metrics.ts) with their rollout dump directory, TensorBoard runs (folders of event files,
// src/core/tensorboard), found in the workspace or picked by hand, and the
// tool-health endpoint of the environment server they search through (src/env/toolHealth.ts). TRL runs need nothing
// here: coa_trainer.integrations.trl writes a CoA run directory (events.jsonl), which the panel already follows.
import * as vscode from 'vscode';
import { basename, dirname, relative, sep } from 'node:path';
import { looksLikeVerlMetrics, verlRunName } from '../../../core/verl/metrics';
import { toolHealthUrlOf } from '../../../env/toolHealth';

/** Where the workspace is not searched (dependencies, caches, our own run directories). */
const EXCLUDE = '{**/node_modules/**,**/.git/**,**/.venv/**,**/.cache/**,**/runs/*/stages/**}';

export interface VerlRunSource {
  metrics: vscode.Uri;
  /** trainer.rollout_data_dir, when known: `<step>.jsonl` dumps. */
  rolloutDir?: vscode.Uri;
  /** The env server's GET /v1/tool-health, token in the path (never saved in the page's state). */
  toolHealthUrl?: string;
}

/** A live-panel key that is a verl metrics file rather than a run directory. */
export function isVerlMetricsUri(uri: vscode.Uri): boolean {
  return uri.path.endsWith('.jsonl') && !uri.path.endsWith('/events.jsonl') && !uri.path.endsWith('.coa.jsonl');
}

async function firstLine(uri: vscode.Uri): Promise<string> {
  const { open } = await import('node:fs/promises');
  const fh = await open(uri.fsPath, 'r');
  try {
    const buf = Buffer.alloc(4096);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    const text = buf.toString('utf8', 0, bytesRead);
    const nl = text.indexOf('\n');
    return nl < 0 ? text : text.slice(0, nl);
  } finally {
    await fh.close();
  }
}

/** verl metrics files in the workspace: `*.jsonl` whose first line is `{"step": N, "data": {…}}`. */
export async function findVerlMetricsFiles(limit = 50): Promise<vscode.Uri[]> {
  const files = await vscode.workspace.findFiles('**/*.jsonl', EXCLUDE, 2000);
  const out: vscode.Uri[] = [];
  for (const f of files) {
    if (!isVerlMetricsUri(f) || /^\d+\.jsonl$/.test(basename(f.fsPath))) continue;
    try {
      // verl writes large lines (hundreds of metrics): a first line cut at 4 KiB still starts with {"step".
      const line = await firstLine(f);
      if (looksLikeVerlMetrics(line) || (line.startsWith('{"step":') && line.includes('"data":{'))) out.push(f);
    } catch {
      // unreadable: not ours to show
    }
    if (out.length >= limit) break;
  }
  return out;
}

/** Where TensorBoard runs are not looked for: the same, and our own runs' TensorBoard mirror (the run is listed). */
const EXCLUDE_TENSORBOARD =
  '{**/node_modules/**,**/.git/**,**/.venv/**,**/.cache/**,**/runs/*/stages/**,**/runs/*/tensorboard/**}';

/** TensorBoard runs in the workspace: folders holding `events.out.tfevents.*` files (verl's tensorboard logger,
 * torch's SummaryWriter, HF Trainer's report_to), newest first. */
export async function findTensorBoardRuns(limit = 50): Promise<vscode.Uri[]> {
  const files = await vscode.workspace.findFiles('**/events.out.tfevents.*', EXCLUDE_TENSORBOARD, 2000);
  const dirs = [...new Set(files.map((f) => dirname(f.fsPath)))].sort();
  return dirs.slice(0, limit).map((d) => vscode.Uri.file(d));
}

/** The rollout dump directory closest to a metrics file: a folder of `<step>.jsonl` files sharing most of its path. */
export async function findRolloutDir(metrics: vscode.Uri): Promise<vscode.Uri | undefined> {
  const dumps = await vscode.workspace.findFiles('**/[0-9]*.jsonl', EXCLUDE, 5000);
  const dirs = new Set(dumps.filter((f) => /^\d+\.jsonl$/.test(basename(f.fsPath))).map((f) => dirname(f.fsPath)));
  let best: string | undefined;
  let bestScore = -1;
  for (const d of dirs) {
    const score = commonPrefix(d, dirname(metrics.fsPath));
    if (score > bestScore) [best, bestScore] = [d, score];
  }
  return best ? vscode.Uri.file(best) : undefined;
}

function commonPrefix(a: string, b: string): number {
  const pa = a.split(sep);
  const pb = b.split(sep);
  let i = 0;
  while (i < pa.length && i < pb.length && pa[i] === pb[i]) i++;
  return i;
}

/** "CoA: Watch verl/TRL Run…": pick a verl metrics file or a CoA-protocol run (TRL via our callback), then open it. */
export async function watchExternalRun(open: (source: vscode.Uri | VerlRunSource) => Promise<void>): Promise<void> {
  const [verl, coa, tensorboard] = await Promise.all([
    findVerlMetricsFiles(),
    vscode.workspace.findFiles('**/events.jsonl', EXCLUDE, 200),
    findTensorBoardRuns(),
  ]);
  type Item = vscode.QuickPickItem & { uri?: vscode.Uri; verl?: boolean };
  const items: Item[] = [
    ...verl.map((uri) => ({
      label: `$(graph) ${verlRunName(uri.fsPath)}`,
      description: `verl metrics · ${vscode.workspace.asRelativePath(uri)}`,
      uri,
      verl: true,
    })),
    ...tensorboard.map((uri) => ({
      label: `$(graph-line) ${basename(uri.fsPath)}`,
      description: `TensorBoard · ${vscode.workspace.asRelativePath(uri)}`,
      uri,
    })),
    ...coa.map((uri) => ({
      label: `$(pulse) ${basename(dirname(uri.fsPath))}`,
      description: `CoA events (CoA trainer or TRL callback) · ${vscode.workspace.asRelativePath(uri)}`,
      uri: vscode.Uri.file(dirname(uri.fsPath)),
    })),
    {
      label: '$(folder-opened) Browse…',
      description:
        'a verl metrics .jsonl, a run directory holding events.jsonl, or a folder of TensorBoard event files',
    },
  ];
  const picked = await vscode.window.showQuickPick(items, {
    title: 'CoA: Watch verl/TRL Run',
    placeHolder:
      verl.length + coa.length + tensorboard.length
        ? 'Run to watch'
        : 'No verl metrics file, events.jsonl or TensorBoard event file found in the workspace',
  });
  if (!picked) return;
  let uri = picked.uri;
  let isVerl = picked.verl === true;
  if (!uri) {
    const chosen = await vscode.window.showOpenDialog({
      canSelectFiles: true,
      canSelectFolders: true,
      filters: { 'JSON Lines': ['jsonl'] },
      openLabel: 'Watch',
      title: 'CoA: Watch verl/TRL Run',
    });
    if (!chosen?.[0]) return;
    uri = chosen[0];
    if (uri.path.endsWith('/events.jsonl')) uri = vscode.Uri.joinPath(uri, '..');
    isVerl = isVerlMetricsUri(uri);
  }
  if (!isVerl) return open(uri);
  const rolloutDir = await findRolloutDir(uri);
  const retrieve = await vscode.window.showInputBox({
    title: 'Tool health (optional)',
    prompt:
      'The retrieval URL this run searches through (…/t/<token>/retrieve of `coa env serve`), to show its tool health. Leave empty to skip.',
    ignoreFocusOut: true,
    validateInput: (v) =>
      !v.trim() || toolHealthUrlOf(v) ? undefined : 'expected http://127.0.0.1:PORT/t/<token>/…/retrieve',
  });
  await open({ metrics: uri, rolloutDir, toolHealthUrl: retrieve ? toolHealthUrlOf(retrieve) : undefined });
}

export function describeRolloutDir(source: VerlRunSource): string {
  return source.rolloutDir
    ? relative(dirname(source.metrics.fsPath), source.rolloutDir.fsPath) || '.'
    : 'no rollout dumps found';
}
