// Train Stage's questions: the quick picks that turn into a TrainRequest (./requests.ts: stage, run config, data,
// model, starting checkpoint), and reading the chosen *.run.json. Texts the e2e tests click are in ./picks.ts.
import * as vscode from 'vscode';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { parse as parseJsonc, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { resolveConfigPaths, dataEntries } from '../../../core/data/paths';
import { modelDirProblem } from '../../../core/data/model';
import { checkedRunConfigInput } from '../../../core/data/configErrors';
import { DataError } from '../../../core/data/errors';
import type { RunConfigInput } from '../../../core/config';
import { readRuns } from '../runs/model';
import {
  LABELS,
  PLACEHOLDERS,
  STAGE_PICKS,
  TITLES,
  checkpointItems,
  checkpointLabel,
  finalCheckpoints,
  looksLikeModelDir,
} from './picks';
import { describeData, type DataPicks } from './data';
import { pickDataFiles } from './dataPicks';
import { COLLECT_LABELS, COLLECT_TITLES, configTeacher, endpointUrlProblem } from './collectPicks';
import type { CollectRequest, TrainRequest } from './requests';

/**
 * Reads a *.run.json (JSON with comments allowed) and checks it with the core's schema, kept as written; reports
 * errors with line:column (a schema error with the field, as `coa data check`, and Open File). undefined = failed.
 */
export function readUserConfig(root: string, path: string): RunConfigInput | undefined {
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
    void vscode.window.showErrorMessage(
      `CoA: ${where}: ${errors.length ? printParseErrorCode(errors[0].error) : 'the run config must be a JSON object'}`,
    );
    return undefined;
  }
  try {
    return checkedRunConfigInput(abs, text, value);
  } catch (e) {
    if (!(e instanceof DataError)) throw e;
    void showConfigError(e);
    return undefined;
  }
}

async function showConfigError(e: DataError): Promise<void> {
  const pick = await vscode.window.showErrorMessage(
    `CoA: the run config is not valid, nothing was started: ${e.message}`,
    'Open File',
  );
  if (pick !== 'Open File') return;
  const pos = new vscode.Position(e.line - 1, e.column - 1);
  await vscode.window.showTextDocument(vscode.Uri.file(e.file), { selection: new vscode.Range(pos, pos) });
}

/**
 * The run config (a *.run.json of the workspace, the embedded default, or "your own data") and its data: the
 * config's data as it is, or other files. Train Stage and Collect Trajectories ask these the same way.
 */
async function pickConfigAndData(
  root: string,
  texts: { title: string; ownData: string; changeData: string; dataPlaceholder: string },
): Promise<{ config: { path?: string }; chosen: RunConfigInput | null; data?: DataPicks } | undefined> {
  const files = await vscode.workspace.findFiles('**/*.run.json', '{**/node_modules/**,**/runs/**}', 200);
  const configItems = [
    {
      label: LABELS.embeddedConfig,
      description: 'every setting at its default',
      path: undefined as string | undefined,
    },
    ...files
      .map((f) => ({ label: relative(root, f.fsPath), description: '', path: f.fsPath }))
      .sort((a, b) => a.label.localeCompare(b.label)),
    { label: LABELS.ownData, description: texts.ownData, path: undefined as string | undefined },
  ];
  const config = await vscode.window.showQuickPick(configItems, {
    title: texts.title,
    placeHolder: PLACEHOLDERS.config,
    ignoreFocusOut: true,
  });
  if (!config) return undefined;
  const chosen = config.path ? readUserConfig(root, config.path) : null;
  if (chosen === undefined) return undefined;
  let data: DataPicks | undefined;
  if (config.label === LABELS.ownData) {
    data = await pickDataFiles(null);
    if (!data) return undefined;
  } else if (chosen && describeData(chosen)) {
    const dataPick = await vscode.window.showQuickPick(
      [
        { label: LABELS.configData, description: describeData(chosen)! },
        { label: LABELS.changeData, description: texts.changeData },
      ],
      { title: TITLES.data, placeHolder: texts.dataPlaceholder, ignoreFocusOut: true },
    );
    if (!dataPick) return undefined;
    if (dataPick.label === LABELS.changeData) {
      data = await pickDataFiles(resolveConfigPaths(chosen, dirname(config.path!)));
      if (!data) return undefined;
    }
  }
  return { config, chosen, data };
}

export async function pickTrainRequest(root: string): Promise<TrainRequest | undefined> {
  const stage = await vscode.window.showQuickPick(
    STAGE_PICKS.map((s) => ({ ...s })),
    { title: TITLES.stage, placeHolder: PLACEHOLDERS.stage, ignoreFocusOut: true },
  );
  if (!stage) return undefined;

  const picked = await pickConfigAndData(root, {
    title: TITLES.config,
    ownData: 'question sets, SFT trajectories, a corpus (default settings otherwise)',
    changeData: 'questions, trajectories, pairs, corpus',
    dataPlaceholder: 'Train on the data the run config names, or choose other files',
  });
  if (!picked) return undefined;
  const { config, chosen, data } = picked;

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
    model = await browseModelDir('Use this model');
    if (!model) return undefined;
  }

  const modelPicked = modelPick.label !== LABELS.embeddedModel;
  const ckpt = await vscode.window.showQuickPick(
    checkpointItems(stage.id, finalCheckpoints(readRuns(join(root, 'runs'))), modelPicked),
    { title: TITLES.checkpoint, placeHolder: PLACEHOLDERS.checkpoint, ignoreFocusOut: true },
  );
  if (!ckpt) return undefined;
  let checkpoint: string | undefined = ckpt.path || undefined;
  if (ckpt.label === LABELS.browseCheckpoint) {
    checkpoint = await browseModelDir('Start from this checkpoint');
    if (!checkpoint) return undefined;
  }
  const embeddedModel = !!configModel && modelPick.label === LABELS.embeddedModel;
  return { stage: stage.id, config: config.path, model, checkpoint, data, ...(embeddedModel ? { embeddedModel } : {}) };
}

/** Collect Trajectories' questions: Train Stage's config and data picks, then the teacher. */
export async function pickCollectRequest(root: string): Promise<CollectRequest | undefined> {
  const picked = await pickConfigAndData(root, {
    title: COLLECT_TITLES.config,
    ownData: 'question sets and a corpus (default settings otherwise)',
    changeData: 'questions, corpus',
    dataPlaceholder: 'Collect on the questions the run config names, or choose other files',
  });
  if (!picked) return undefined;
  const { config, chosen, data } = picked;
  const own = configTeacher(chosen);
  const finals = finalCheckpoints(readRuns(join(root, 'runs'))).map((f) => ({
    label: checkpointLabel(f.runId, f.stage),
    description: f.step !== null ? `step ${f.step}` : '',
    path: f.path,
  }));
  const pick = await vscode.window.showQuickPick(
    [
      ...(own ? [{ label: COLLECT_LABELS.configTeacher, description: own, path: '' }] : []),
      ...finals,
      {
        label: COLLECT_LABELS.modelDir,
        description: 'a directory with config.json, a tokenizer and weights',
        path: '',
      },
      {
        label: COLLECT_LABELS.endpoint,
        description: 'vLLM, SGLang, transformers serve, a hosted API (…/v1)',
        path: '',
      },
    ],
    {
      title: COLLECT_TITLES.teacher,
      placeHolder: 'Pick the teacher to sample trajectories from',
      ignoreFocusOut: true,
    },
  );
  if (!pick) return undefined;
  const req: CollectRequest = { config: config.path, data };
  if (pick.label === COLLECT_LABELS.modelDir) {
    req.teacher = await browseModelDir('Sample from this model');
    if (!req.teacher) return undefined;
  } else if (pick.label === COLLECT_LABELS.endpoint) {
    const url = await vscode.window.showInputBox({
      title: COLLECT_TITLES.url,
      prompt: 'Base URL of an OpenAI-compatible server (checked with GET /models before sampling)',
      value: 'http://127.0.0.1:8000/v1',
      ignoreFocusOut: true,
      validateInput: endpointUrlProblem,
    });
    if (!url) return undefined;
    req.teacherUrl = url.trim();
  } else if (pick.path) req.teacher = pick.path;
  return req;
}

async function browseModelDir(openLabel: string): Promise<string | undefined> {
  const picked = await vscode.window.showOpenDialog({
    canSelectFolders: true,
    canSelectFiles: false,
    canSelectMany: false,
    openLabel,
  });
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
    void vscode.window.showErrorMessage(
      `CoA: ${problem ?? `${dir} is not a Hugging Face model directory (config.json and *.safetensors / *.bin expected).`}`,
    );
    return undefined;
  }
  return dir;
}
