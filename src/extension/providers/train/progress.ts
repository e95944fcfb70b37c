// How a running stage shows its progress: the status bar item (one for all runs) and the cancellable
// notification, both fed from the trainer's events on stdout (progress, metrics' loss, run_started, errors).
import * as vscode from 'vscode';
import { parseEvent } from '../../../core/events';
import { stageLabel } from '../../process/trainer';

export class TrainingStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem('coaStudio.training', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'CoA Studio training';
  }

  starting(title: string, runDir: string, stage: string): void {
    this.item.text = `$(sync~spin) CoA ${stageLabel(stage)}: starting`;
    this.item.tooltip = `${title}\nClick to open the live panel`;
    this.item.command = {
      title: 'Open live panel',
      command: 'coaStudio.openLivePanel',
      arguments: [vscode.Uri.file(runDir)],
    };
    this.item.show();
  }

  set text(text: string) {
    this.item.text = text;
  }

  hide(): void {
    this.item.hide();
  }

  dispose(): void {
    this.item.dispose();
  }
}

/** One run's event reader: updates the status bar and the notification, remembers the trainer's error message. */
export class RunProgress {
  private report: ((message: string, increment?: number) => void) | undefined;
  private lastPct = 0;
  private lastLoss: number | null = null;
  /** The message of the trainer's error event, if it sent one. */
  errorMessage: string | undefined;

  constructor(
    private readonly status: TrainingStatus,
    private readonly log: vscode.LogOutputChannel,
    private readonly changed: () => void,
  ) {}

  /** The notification's progress, once it is shown. */
  attach(progress: vscode.Progress<{ message?: string; increment?: number }>): void {
    this.report = (message, increment) => progress.report({ message, increment });
  }

  say(message: string): void {
    this.report?.(message);
  }

  onLine(line: string): void {
    const parsed = parseEvent(line);
    if (!parsed.ok) return;
    const e = parsed.event;
    if (e.type === 'metrics' && typeof e.values.loss === 'number') this.lastLoss = e.values.loss;
    if (e.type === 'progress') {
      const pct = e.total ? (100 * e.step) / e.total : 0;
      const eta = e.eta_s !== null ? ` · ETA ${formatDuration(e.eta_s)}` : '';
      const loss = this.lastLoss !== null ? ` · loss ${this.lastLoss.toFixed(3)}` : '';
      this.status.text = `$(sync~spin) CoA ${stageLabel(e.stage)} ${e.step}/${e.total}${eta}`;
      this.report?.(`${stageLabel(e.stage)} step ${e.step}/${e.total}${loss}${eta}`, Math.max(0, pct - this.lastPct));
      this.lastPct = pct;
    } else if (e.type === 'run_started') {
      this.lastPct = 0;
      this.report?.(
        `${stageLabel(e.stage)}: started on ${e.device}${e.resumed_from ? ` (resumed at step ${e.resumed_from})` : ''}`,
      );
      this.changed();
    } else if (e.type === 'stage_finished' || e.type === 'checkpoint' || e.type === 'eval') this.changed();
    else if (e.type === 'error') this.errorMessage = e.message;
    else if (e.type === 'alert') this.log.warn(`alert ${e.kind} at ${e.stage} step ${e.step}: ${e.message}`);
  }
}

export function formatDuration(s: number): string {
  if (s < 60) return `${Math.round(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
