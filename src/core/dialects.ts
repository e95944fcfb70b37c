// The four trajectory dialects: which tags mark thinking, tool calls, observations and the answer.
// Everything that needs to know a tag name (scanner, format rules, grammar tests, trainer tokenizer) reads it here.

export const DIALECT_NAMES = ['coa', 'search-r1', 'autocoa', 'hermes'] as const;
export type DialectName = (typeof DIALECT_NAMES)[number];

/** How a boxed-answer dialect opens its answer (AutoCoA's `\boxed{…}`, braces balanced). */
export const BOXED_OPEN = '\\boxed{';

export interface TagPair {
  open: string;
  close: string;
}

export interface Dialect {
  name: DialectName;
  description: string;
  think: TagPair;
  /**
   * How a tool call is written. `per-tool`: one tag pair named after the tool (`<search>q</search>`);
   * `fixed`: one pair for every tool, the tool named by the pair itself (AutoCoA's `<begin_search>`);
   * `json`: one pair whose body is `{"name": …, "arguments": …}` (Hermes).
   */
  action: { style: 'per-tool' } | { style: 'fixed'; tool: string; tags: TagPair } | { style: 'json'; tags: TagPair };
  observation: TagPair;
  /** The answer: a tag pair, or `\boxed{…}` (braces balanced). */
  answer: { style: 'tag'; tags: TagPair } | { style: 'boxed' };
  /** Actions and observations are written inside `<think>` (AutoCoA searches "within internal reasoning"). */
  actionsInsideThink: boolean;
  /** The chat template may pre-fill `<think>`, so a response may start inside it (DeepSeek-R1 distills). */
  implicitThinkOpen: boolean;
}

export const DIALECTS: Record<DialectName, Dialect> = {
  coa: {
    name: 'coa',
    description: 'CoA Studio default: <think>, one tag per tool (<search>), <observation>, <answer>.',
    think: { open: '<think>', close: '</think>' },
    action: { style: 'per-tool' },
    observation: { open: '<observation>', close: '</observation>' },
    answer: { style: 'tag', tags: { open: '<answer>', close: '</answer>' } },
    actionsInsideThink: false,
    implicitThinkOpen: false,
  },
  'search-r1': {
    name: 'search-r1',
    description: 'Search-R1: <think>, <search>, <information>, <answer>.',
    think: { open: '<think>', close: '</think>' },
    action: { style: 'per-tool' },
    observation: { open: '<information>', close: '</information>' },
    answer: { style: 'tag', tags: { open: '<answer>', close: '</answer>' } },
    actionsInsideThink: false,
    implicitThinkOpen: false,
  },
  autocoa: {
    name: 'autocoa',
    description: 'AutoCoA: <begin_search> q </end_search> and <search_result> inside <think>, answer in \\boxed{}.',
    think: { open: '<think>', close: '</think>' },
    action: { style: 'fixed', tool: 'search', tags: { open: '<begin_search>', close: '</end_search>' } },
    observation: { open: '<search_result>', close: '</search_result>' },
    answer: { style: 'boxed' },
    actionsInsideThink: true,
    implicitThinkOpen: true,
  },
  hermes: {
    name: 'hermes',
    description: 'Hermes/Qwen tool calling: <tool_call>{"name", "arguments"}</tool_call>, <tool_response>, <answer>.',
    think: { open: '<think>', close: '</think>' },
    action: { style: 'json', tags: { open: '<tool_call>', close: '</tool_call>' } },
    observation: { open: '<tool_response>', close: '</tool_response>' },
    answer: { style: 'tag', tags: { open: '<answer>', close: '</answer>' } },
    actionsInsideThink: false,
    implicitThinkOpen: false,
  },
};

export const DEFAULT_TOOLS: readonly string[] = ['search'];

export function isDialectName(name: string): name is DialectName {
  return (DIALECT_NAMES as readonly string[]).includes(name);
}

/** `<think>` → `think`, `</end_search>` → `end_search` (the grammar generator's tag names, scripts/grammar-gen.mjs). */
export function bare(tag: string): string {
  return tag.replace(/^<\/?/, '').replace(/>$/, '');
}

/**
 * Guess the dialect from the tags a text uses. Distinctive tags decide; plain `<search>` without
 * `<information>` is the default `coa`.
 */
export function detectDialect(text: string): DialectName {
  // One pass over the text collecting which distinctive tags occur, then the precedence below.
  let autocoa = false;
  let hermes = false;
  let searchR1 = false;
  let boxed = false;
  DETECT_RE.lastIndex = 0;
  for (let m = DETECT_RE.exec(text); m; m = DETECT_RE.exec(text)) {
    const tag = m[1];
    if (tag === undefined) boxed = true;
    else if (tag === 'begin_search' || tag === '/end_search' || tag === 'search_result') autocoa = true;
    else if (tag === 'tool_call' || tag === 'tool_response') hermes = true;
    else searchR1 = true; // <information> or </information>
    if (autocoa) break;
  }
  if (autocoa) return 'autocoa';
  if (hermes) return 'hermes';
  if (searchR1) return 'search-r1';
  if (boxed && !/<(observation|answer|search)>/.test(text)) return 'autocoa';
  return 'coa';
}
const DETECT_RE = /<(begin_search|\/end_search|search_result|tool_call|tool_response|\/?information)>|\\boxed\{/g;

/**
 * Every tag token of every dialect (for grammars, tokenizers and completion). Per-tool action tags are
 * given for the default tools.
 */
export function allTags(tools: readonly string[] = DEFAULT_TOOLS): string[] {
  const tags = new Set<string>();
  for (const d of Object.values(DIALECTS)) {
    tags.add(d.think.open).add(d.think.close).add(d.observation.open).add(d.observation.close);
    if (d.answer.style === 'tag') tags.add(d.answer.tags.open).add(d.answer.tags.close);
    if (d.action.style === 'per-tool') for (const t of tools) tags.add(`<${t}>`).add(`</${t}>`);
    else tags.add(d.action.tags.open).add(d.action.tags.close);
  }
  return [...tags];
}
