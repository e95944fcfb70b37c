// Renders the trainer's JSON events (protocol v1, src/core/events.ts) as human-readable progress lines for
// `npm run demo`. Pure: one event in, zero or more lines out (plus a `live` line a TTY may overwrite in place).

const fmt = (v, digits = 3) => (v === null || v === undefined ? '—' : Number(v).toFixed(digits));

export function duration(s) {
  if (s === null || s === undefined || !Number.isFinite(s)) return '?';
  if (s < 60) return `${s.toFixed(0)} s`;
  return `${Math.floor(s / 60)} min ${String(Math.round(s % 60)).padStart(2, '0')} s`;
}

/** Which numbers a stage's progress line shows: losses for LM/SFT stages, reward and agent metrics for RL. */
function metricCells(values) {
  if (!values) return [];
  const cells = [];
  if ('reward_mean' in values) cells.push(`reward ${fmt(values.reward_mean)}`);
  if ('loss' in values && !('reward_mean' in values)) cells.push(`loss ${fmt(values.loss)}`);
  if ('pair_acc' in values) cells.push(`pair acc ${fmt(values.pair_acc, 2)}`);
  if ('em' in values) cells.push(`EM ${fmt(values.em, 2)}`);
  if ('tc' in values) cells.push(`TC ${fmt(values.tc, 2)}`);
  return cells;
}

const EVAL_KEYS = [
  ['em', 'EM'],
  ['tc', 'TC'],
  ['tp', 'TP'],
  ['format_error_rate', 'format errors'],
  ['loss', 'loss'],
  ['pair_acc', 'pair acc'],
];

export class ProgressRenderer {
  constructor() {
    this.metrics = new Map(); // stage → last metrics values
    this.started = new Map(); // stage → first event time
  }

  /** @returns {{lines: string[], live?: string}} */
  render(ev) {
    const lines = [];
    switch (ev.type) {
      case 'run_started':
        if (ev.stage === 'pipeline') lines.push(`pipeline: ${ev.total_steps} steps, run ${ev.run}`);
        else {
          this.started.set(ev.stage, ev.time);
          const resumed = ev.resumed_from ? `, resumed from step ${ev.resumed_from}` : '';
          lines.push(`  ${ev.stage}: ${ev.total_steps} steps on ${ev.device}${resumed}`);
        }
        break;
      case 'log':
        if (/^pipeline: \S+ \(\d+\/\d+\)$/.test(ev.message)) lines.push(`\n▶ ${ev.message.slice(10)}`);
        else if (ev.level === 'warning' || ev.level === 'error') lines.push(`  ! ${ev.message}`);
        else if (!ev.message.includes('\n')) lines.push(`  ${ev.message.replace(/^pipeline: /, '')}`);
        break;
      case 'metrics':
        this.metrics.set(ev.stage, ev.values);
        break;
      case 'progress': {
        if (ev.stage === 'pipeline') break;
        const cells = [`step ${ev.step}/${ev.total}`, ...metricCells(this.metrics.get(ev.stage))];
        cells.push(`${duration(ev.elapsed_s)} elapsed`, `ETA ${duration(ev.eta_s ?? 0)}`);
        const line = `  [${ev.stage}] ${cells.join(' · ')}`;
        const every = Math.max(1, Math.ceil(ev.total / 5));
        return { lines: ev.step % every === 0 || ev.step === ev.total ? [line] : [], live: line };
      }
      case 'eval': {
        const cells = EVAL_KEYS.filter(([k]) => k in ev.metrics).map(([k, name]) => `${name} ${fmt(ev.metrics[k])}`);
        lines.push(`  [${ev.stage}] eval on ${ev.split}: ${cells.join(' · ')}`);
        break;
      }
      case 'alert':
        lines.push(`  ⚠ [${ev.stage}] step ${ev.step} ${ev.kind}: ${ev.message}`);
        break;
      case 'stage_finished': {
        if (ev.stage === 'pipeline') break;
        const t0 = this.started.get(ev.stage);
        const took = t0 !== undefined ? ` in ${duration(ev.time - t0)}` : '';
        lines.push(`  ${ev.status === 'ok' ? '✓' : '✗'} ${ev.stage} ${ev.status} at step ${ev.step}${took}`);
        break;
      }
      case 'error':
        lines.push(`  ✗ ${ev.stage ? `[${ev.stage}] ` : ''}${ev.message}`);
        break;
      default:
        break; // sample, checkpoint: in events.jsonl for the editor, too detailed for the terminal
    }
    return { lines };
  }
}
