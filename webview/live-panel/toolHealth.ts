// The tool-health table: per run whose environment server the host polls (a verl run watched with its retrieval URL),
// one row per caller of the search tool — calls, failures, queries that found nothing, latency p50/p99 — from the
// server's GET /v1/tool-health (src/env/toolHealth.ts). Failures and empty results are what verl's own metrics never
// show (its ToolAgentLoop drops tool metrics), so they are highlighted when non-zero.
import type { PanelModel } from './model';
import type { ToolHealthRow } from '../../src/protocols/livePanel';
import { el, icon } from './dom';

export interface ToolHealthState {
  callers: Record<string, ToolHealthRow>;
  error?: string;
}

const pct = (n: number, d: number) => (d ? `${((100 * n) / d).toFixed(1)}%` : '—');
const ms = (v: number | null) => (v === null ? '—' : `${v.toFixed(v < 10 ? 2 : 0)} ms`);

export function renderToolHealth(root: HTMLElement, model: PanelModel, health: Map<string, ToolHealthState>): void {
  const sections = [...health].filter(([run]) => model.runs.has(run));
  root.hidden = sections.length === 0;
  root.replaceChildren(
    ...sections.map(([run, h]) => {
      const label = model.runs.get(run)!.info.label;
      const rows = Object.entries(h.callers);
      const table = el(
        'table',
        { class: 'tool-health', 'data-run': run },
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            ...['caller', 'calls', 'failures', 'queries', 'empty results', 'p50', 'p99'].map((c) => el('th', {}, c)),
          ),
        ),
        el(
          'tbody',
          {},
          ...rows.map(([caller, r]) =>
            el(
              'tr',
              { 'data-caller': caller, title: r.last_error ? `last error: ${r.last_error}` : '' },
              el('td', {}, caller),
              el('td', {}, String(r.calls)),
              el('td', { class: r.failures ? 'bad' : '' }, `${r.failures} (${pct(r.failures, r.calls)})`),
              el('td', {}, String(r.queries)),
              el(
                'td',
                { class: r.empty_results ? 'warn' : '' },
                `${r.empty_results} (${pct(r.empty_results, r.queries)})`,
              ),
              el('td', {}, ms(r.latency_ms.p50)),
              el('td', {}, ms(r.latency_ms.p99)),
            ),
          ),
        ),
      );
      return el(
        'section',
        { class: 'tool-health-run' },
        el('h2', {}, icon('tools'), ` Tool health · ${label}`),
        h.error
          ? el('p', { class: 'muted' }, h.error)
          : rows.length
            ? table
            : el('p', { class: 'muted' }, 'No tool calls yet.'),
      );
    }),
  );
}
