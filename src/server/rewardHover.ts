// Hover contents: the reward breakdown table of a record and the tool result behind an action. Rewards come from
// the core's scoreRecords/describeFormula only.
import { describeFormula, OtcState, scoreRecords } from '../core/rewards';
import type { RewardBreakdown, TrajectoryRecord } from '../core/record';
import { actionQuery, Segment } from '../core/scanner';
import type { DialectName } from '../core/dialects';
import { EnvClient } from '../env/client';
import { rewardParams, Settings } from './settings';

/** Escape a value for a Markdown table cell. */
function cell(v: string): string {
  return v
    .replace(/\\/g, '\\\\')
    .replace(/\|/g, '\\|')
    .replace(/[\r\n]+/g, ' ');
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

const num = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(4).replace(/0+$/, ''));

/**
 * Breakdown of `record` under the configured scheme. For OTC-GRPO, `group` holds the other records of the file with
 * the same question, each with its own single-record OTC-GRPO breakdown (to know which are correct): their tool
 * counts seed the state, so n is what scoring the whole group would give.
 */
export function rewardOf(
  record: TrajectoryRecord,
  settings: Settings,
  group: readonly { record: TrajectoryRecord; solo: RewardBreakdown }[] = [],
): RewardBreakdown {
  const params = rewardParams(settings);
  if (settings.rewardScheme !== 'otc-grpo') return scoreRecords([record], settings.rewardScheme, params)[0];
  const state = new OtcState();
  for (const g of group) if (g.solo.r_correct > 0) state.observe(g.record.question, g.solo.tool_calls);
  return scoreRecords([record], 'otc-grpo', params, state)[0];
}

export function rewardMarkdown(
  record: TrajectoryRecord,
  b: RewardBreakdown,
  settings: Settings,
  answer: string | null,
  groupSize: number,
): string {
  const rows: [string, string][] = [
    ['scheme', b.scheme],
    ['EM', num(b.em)],
    ['F1', num(b.f1)],
    ['format', b.format_ok ? 'ok' : 'errors'],
    ['violations', b.violations.length ? b.violations.join(', ') : '—'],
    ['m (tool calls)', String(b.tool_calls)],
    ['n (optimal)', b.optimal_tool_calls === null ? '—' : String(b.optimal_tool_calls)],
    ['r_tool', num(b.r_tool)],
    ['r_correct', num(b.r_correct)],
    ['total', `**${num(b.total)}**`],
  ];
  const lines = [
    `**Reward of \`${cell(clip(record.id, 80))}\`**`,
    '',
    '| | |',
    '| --- | --- |',
    ...rows.map(([k, v]) => `| ${k} | ${cell(v)} |`),
    '',
    `\`${describeFormula(b.scheme, rewardParams(settings))}\``,
    '',
    `answer: \`${cell(clip(answer ?? '(none)', 200))}\` · golden: ${(record.golden_answers ?? []).map((g) => `\`${cell(clip(g, 80))}\``).join(', ') || '(none)'}`,
  ];
  if (b.scheme === 'otc-grpo')
    lines.push(
      '',
      `n: fewest tool calls among correct answers to this question in this file (${groupSize} record${groupSize === 1 ? '' : 's'}).`,
    );
  return lines.join('\n');
}

/** Hover of an action: the environment server's result when configured, else the argument and its observation. */
export async function actionMarkdown(
  action: Segment,
  observation: string | null,
  dialect: DialectName,
  settings: Settings,
): Promise<string> {
  const query = actionQuery(action);
  const head = `**${action.tool || 'tool call'}** \`${cell(clip(query, 300))}\``;
  const local =
    observation === null
      ? '_no observation follows this action_'
      : `observation:\n\n\`\`\`text\n${clip(observation, 2000).replace(/```/g, '`\u200b``')}\n\`\`\``;
  const { url, token } = settings.envServer;
  if (!url || (action.tool && action.tool !== 'search')) return `${head}\n\n${local}`;
  try {
    const client = new EnvClient({ url, token, timeoutMs: 3000 });
    const res = await client.search({ queries: [query], top_k: 3, dialect });
    const hits = res.results[0] ?? [];
    const list = hits.map(
      (h, i) =>
        `${i + 1}. **${cell(clip(h.title || h.id, 120))}** (${h.score.toFixed(3)}) ${cell(clip(h.contents, 300))}`,
    );
    return [`${head} — environment server result`, '', ...(list.length ? list : ['_no results_']), '', local].join(
      '\n',
    );
  } catch (e) {
    return `${head}\n\n_environment server: ${cell(clip((e as Error).message, 200))}_\n\n${local}`;
  }
}
