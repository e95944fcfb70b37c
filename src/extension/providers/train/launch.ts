// What a run needs before and around the trainer process: the project's Python, the child environment, the data
// check of a new run's config, the environment server of RL stages (and the benchmark corpus it searches), and
// failure messages. No state of its own beyond the extension's path and log.
import * as vscode from 'vscode';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { readConfig } from '../../config';
import { resolvePython } from '../../python';
import { ManagedProcess, type SpawnSpec } from '../../process/manager';
import { startEnvServer, type RunningEnvServer } from '../../process/envServer';
import { trainerEnv } from '../../process/trainer';
import { runDataCheck } from '../../process/dataCheck';
import { requireTrust, workspaceRoot } from '../../workspace';
import type { DataErrorLocation } from '../../../core/data/errors';
import { RunConfigSchema, type RunConfig } from '../../../core/config';

/** A run directory's config.json as the trainer will read it; the defaults when it is unreadable or not valid (the
 * trainer reports a bad config itself, with its file, line and column). */
function readRunConfig(configPath: string): RunConfig {
  let value: unknown = {};
  try {
    value = JSON.parse(readFileSync(configPath, 'utf8'));
  } catch {
    /* reported by the trainer */
  }
  const parsed = RunConfigSchema.safeParse(value);
  return parsed.success ? parsed.data : RunConfigSchema.parse({});
}

export class Launcher {
  constructor(
    private readonly extensionPath: string,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  python(): string {
    return resolvePython({
      setting: readConfig().python,
      workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
      extensionPath: this.extensionPath,
    }).path;
  }

  childEnv(): NodeJS.ProcessEnv {
    return trainerEnv({ base: process.env, extensionPath: this.extensionPath, node: process.execPath });
  }

  get cli(): string {
    return join(this.extensionPath, 'dist', 'cli.js');
  }

  /** The project's Python running `args` in the workspace, logged. */
  pythonProcess(what: string, args: string[], extra: Partial<SpawnSpec> = {}): ManagedProcess {
    return new ManagedProcess({
      what,
      command: this.python(),
      args,
      cwd: workspaceRoot(),
      env: this.childEnv(),
      log: this.log,
      ...extra,
    });
  }

  /**
   * `coa data check` on the run's config; false when it fails: the new run directory (only the config just
   * written) is removed and the error, naming the file, is shown without waiting for the user.
   */
  async checkData(configPath: string, runDir: string): Promise<boolean> {
    const abort = new AbortController();
    const outcome = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: "CoA: checking the run's data and model",
        cancellable: true,
      },
      (_p, token) => {
        token.onCancellationRequested(() => abort.abort());
        return runDataCheck({
          node: process.execPath,
          cli: this.cli,
          config: configPath,
          env: this.childEnv(),
          signal: abort.signal,
        });
      },
    );
    if (outcome.ok) {
      for (const f of outcome.result.files)
        this.log.info(`data check: ${f.key} ${f.path}: ${f.count}${f.summary ? ` ${JSON.stringify(f.summary)}` : ''}`);
      if (outcome.result.built_pairs)
        this.log.info(`data check: SFT-1 pairs from data.sft: ${JSON.stringify(outcome.result.built_pairs)}`);
      for (const w of outcome.result.warnings ?? []) this.log.warn(`data check: ${w}`);
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
    const pick = await vscode.window.showErrorMessage(
      `CoA: the run's data did not pass the check, nothing was started: ${message}`,
      ...(openable ? ['Open File'] : []),
      'Show Log',
    );
    if (pick === 'Show Log') this.log.show();
    if (pick === 'Open File' && loc) {
      const pos = new vscode.Position(loc.line - 1, loc.column - 1);
      await vscode.window.showTextDocument(vscode.Uri.file(loc.file), { selection: new vscode.Range(pos, pos) });
    }
  }

  async startEnvFor(runDir: string, configPath: string): Promise<RunningEnvServer | undefined> {
    if (!(await requireTrust('The environment server'))) return undefined;
    const config = readRunConfig(configPath);
    const dataDir = config.benchmark.data_dir ?? join(runDir, 'data');
    const corpus = config.data?.corpus ?? config.env.corpus ?? join(dataDir, 'corpus.jsonl');
    if (!existsSync(corpus)) {
      // The embedded benchmark (and its search corpus) is written by `coa_trainer data`: make it first.
      const r = await this.pythonProcess('benchmark writer', [
        '-m',
        'coa_trainer',
        'data',
        '--config',
        configPath,
        '--out',
        dataDir,
      ]).done;
      if (r.status !== 'ok' || !existsSync(corpus)) {
        await this.showFailure(
          r.message || `CoA: the search corpus ${corpus} is missing; set env.corpus in the run config.`,
        );
        return undefined;
      }
    }
    try {
      return await startEnvServer({
        node: process.execPath,
        cli: this.cli,
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

  /** An error with "Show Log", and "Resume Run" when `resume` is given. */
  async showFailure(message: string, resume?: () => Promise<void>): Promise<void> {
    const actions = resume ? ['Show Log', 'Resume Run'] : ['Show Log'];
    const pick = await vscode.window.showErrorMessage(`CoA: ${message}`, ...actions);
    if (pick === 'Show Log') this.log.show();
    if (pick === 'Resume Run' && resume) await resume();
  }
}
