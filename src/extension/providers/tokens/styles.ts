// What each token overlay looks like, once: the decorations (overlays.ts) and the legend that says which overlays
// are on and what their colours mean (legend.ts) read the same table. Colours are #rrggbbaa, which both editor
// decorations and the hover/status Markdown sanitizer accept. No `vscode` import.
import { LOGPROB_BUCKETS, OVERLAY_VIEWS, type OverlayView } from './mapping';

export interface OverlayStyle {
  /** What the legend calls it. */
  label: string;
  background?: string;
  /** Underline (advantage) or strike-through (masked) colour. */
  line?: string;
  lineStyle?: 'solid' | 'dotted' | 'through';
  faded?: boolean;
}

export const VIEW_NAMES: Record<OverlayView, string> = {
  mask: 'loss mask',
  logprob: 'log-prob heat map',
  advantage: 'advantage sign',
};

const HEAT = ['#00a0001a', '#a0c80038', '#e6b4004d', '#f06e0061', '#e6141473'];
const HEAT_LABELS = ['p ≥ 0.9', 'p ≥ 0.5', 'p ≥ 0.1', 'p ≥ 0.01', 'p < 0.01'];

export const OVERLAY_STYLES: Record<OverlayView, Record<string, OverlayStyle>> = {
  mask: {
    trained: { label: 'trained (loss mask 1)', background: '#28a0ff2e' },
    masked: { label: 'masked (observation, prompt)', faded: true, line: '#80808099', lineStyle: 'through' },
  },
  logprob: Object.fromEntries(LOGPROB_BUCKETS.map((k, i) => [k, { label: HEAT_LABELS[i], background: HEAT[i] }])),
  advantage: {
    positive: { label: 'advantage > 0', line: '#00aa00e6', lineStyle: 'solid' },
    negative: { label: 'advantage < 0', line: '#dc0000e6', lineStyle: 'solid' },
    zero: { label: 'advantage 0', line: '#808080b3', lineStyle: 'dotted' },
  },
};

/** "loss mask · log-prob heat map", in the order the commands list them; '' when none is on. */
export function overlayNames(on: ReadonlySet<OverlayView>): string {
  return OVERLAY_VIEWS.filter((v) => on.has(v))
    .map((v) => VIEW_NAMES[v])
    .join(' · ');
}

/** The legend as Markdown (HTML spans with the overlay colours; the caller enables supportHtml). */
export function legendMarkdown(on: ReadonlySet<OverlayView>): string {
  const views = OVERLAY_VIEWS.filter((v) => on.has(v));
  if (!views.length)
    return 'No token overlay is on. *CoA: Choose Token Overlays…* turns them on for records with `tokens.offsets`.';
  const swatch = (s: OverlayStyle) =>
    s.background
      ? `<span style="background-color:${s.background};">&nbsp;tok&nbsp;</span>`
      : `<span style="color:${s.line};">${s.lineStyle === 'dotted' ? '┈┈' : s.lineStyle === 'through' ? '—' : '━━'}</span>`;
  const lines = views.map(
    (v) =>
      `**${VIEW_NAMES[v]}**: ${Object.values(OVERLAY_STYLES[v])
        .map((s) => `${swatch(s)} ${s.label}`)
        .join(' &nbsp; ')}`,
  );
  return [...lines, '', 'Hover a token for its id, log-prob, loss mask and advantage.'].join('\n\n');
}
