// Format rule codes. Codes are stable: never renumber, only add. docs/format-rules.md documents each one
// (a unit test keeps the two in step).

export type Severity = 'error' | 'warning';
export type Strictness = 'lenient' | 'strict';

export interface RuleInfo {
  code: string;
  title: string;
  severity: Severity;
  /** Only checked in `strict` mode (Search-R1's sequence rule). */
  strictOnly: boolean;
  /** Only checked on complete episodes (not on a response still being generated). */
  completeOnly: boolean;
  /** The tool call itself is malformed (the trainer's "malformed calls" metric counts these). */
  toolCall: boolean;
}

function rule(
  code: string,
  title: string,
  severity: Severity,
  opts: Partial<Pick<RuleInfo, 'strictOnly' | 'completeOnly' | 'toolCall'>> = {},
): RuleInfo {
  return {
    code,
    title,
    severity,
    strictOnly: opts.strictOnly ?? false,
    completeOnly: opts.completeOnly ?? false,
    toolCall: opts.toolCall ?? false,
  };
}

export const RULES = {
  COA001: rule('COA001', 'unclosed tag', 'error', { completeOnly: true }),
  COA002: rule('COA002', 'stray closing tag', 'error'),
  COA003: rule('COA003', 'forbidden nesting', 'error'),
  COA004: rule('COA004', 'observation without a preceding action', 'error'),
  COA005: rule('COA005', 'action without observation', 'error', { toolCall: true }),
  COA006: rule('COA006', 'missing answer', 'error', { completeOnly: true }),
  COA007: rule('COA007', 'several answers', 'error'),
  COA008: rule('COA008', 'content after the answer', 'error'),
  COA009: rule('COA009', 'empty action argument', 'error', { toolCall: true }),
  COA010: rule('COA010', 'invalid tool-call JSON', 'error', { toolCall: true }),
  COA011: rule('COA011', 'unknown tool', 'error', { toolCall: true }),
  COA012: rule('COA012', 'turn limit exceeded', 'error', { toolCall: true }),
  COA013: rule('COA013', 'text outside tags', 'error', { strictOnly: true }),
  COA014: rule('COA014', 'action or answer without a preceding <think>', 'error', { strictOnly: true }),
  COA015: rule('COA015', 'empty answer', 'error'),
  COA016: rule('COA016', 'tag from another dialect', 'warning'),
  COA017: rule('COA017', 'tag opened again before it is closed', 'error'),
} as const;

export type RuleCode = keyof typeof RULES;

export interface FormatDiagnostic {
  code: RuleCode;
  severity: Severity;
  message: string;
  /** Character offsets into the response text, end exclusive. */
  start: number;
  end: number;
}

/** Record-level problems of a JSONL file (not part of the format reward: such a line is not a trajectory). */
export const RECORD_RULES = {
  COA101: { code: 'COA101', title: 'invalid JSON line', severity: 'error' },
  COA102: { code: 'COA102', title: 'record schema violation', severity: 'error' },
  COA103: { code: 'COA103', title: 'duplicate record id', severity: 'error' },
  COA104: { code: 'COA104', title: 'not a text file', severity: 'error' },
  COA105: { code: 'COA105', title: 'invalid UTF-8', severity: 'error' },
  COA106: { code: 'COA106', title: 'token drift', severity: 'warning' },
} as const;
export type RecordCode = keyof typeof RECORD_RULES;
