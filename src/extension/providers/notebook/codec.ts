// Trajectory file ⇄ notebook cells, without `vscode` (tested in-process). A record becomes a header cell plus
// step cells whose texts concatenate to its `response`; saving writes each record's original line back unless a
// step changed, so unchanged records stay byte-identical, and bad lines, blank lines and line endings survive too.
import { parseRecordLine } from '../../../core/jsonl';
import { dumpRow, looksLikeVerlDump, verlLineParser, verlRunDialect } from '../../../core/importers/verl-rollouts';
import { isQuestion, type RewardBreakdown, type TrajectoryRecord } from '../../../core/record';
import { describeQuestions, summarizeQuestions, type QuestionSummary } from '../../../core/questionSummary';
import { OtcState, RewardParams, describeFormula, formatOf, questionKey, scoreRecords } from '../../../core/rewards';
import type { Scheme } from '../../../core/record';
import type { Segment } from '../../../core/scanner';
import { recordDiagnosticsMarkdown } from './recordDiagnostics';
import {
  CellMeta,
  ERROR_LANGUAGE,
  ErrorCellMeta,
  HeaderCellMeta,
  META_KEY,
  NotebookMeta,
  REWARD_MIME,
  RewardOutput,
  STEP_LANGUAGE,
  StepCellMeta,
  SummaryCellMeta,
  cellMeta,
} from './cells';

/** Structural twins of vscode.NotebookData / NotebookCellData (the adapter maps them 1:1). */
export interface CellOutputItem {
  mime: string;
  data: unknown;
}
export interface CellData {
  kind: 'markup' | 'code';
  value: string;
  languageId: string;
  metadata?: { [key: string]: unknown };
  /** One output made of alternative representations of the same thing (richest first). */
  outputs?: CellOutputItem[][];
}
export interface NotebookContent {
  cells: CellData[];
  metadata: { [key: string]: unknown };
}

export interface DecodeOptions {
  scheme?: Scheme;
  params?: RewardParams;
  /** Shown in error messages (the file's path). */
  source?: string;
  /** Precomputed rewards, one per valid record in order (views reuse the whole file's rewards). */
  rewards?: NotebookRewards;
  /**
   * The text is one record cut from a bigger file (the record view, recordView.ts): the line number its first line
   * has there, and the file's name for the header ("line 1,451 of rl2-otc/rollouts.coa.jsonl").
   */
  within?: { line: number; file: string };
}

/** One line of the file as read: its text without terminator, the terminator and the blank lines before it. */
export interface SourceLine {
  line: number;
  raw: string;
  eol: string;
  gap: string;
}

/** Split text into non-blank lines, keeping every byte that is not a line (blank lines, terminators). */
export function splitLines(text: string, firstLine = 1): { lines: SourceLine[]; trailer: string } {
  const lines: SourceLine[] = [];
  let gap = '';
  let start = 0;
  let lineNo = firstLine - 1;
  while (start < text.length) {
    let nl = text.indexOf('\n', start);
    const last = nl < 0;
    if (last) nl = text.length;
    lineNo++;
    let raw = text.slice(start, nl);
    let eol = last ? '' : '\n';
    if (raw.endsWith('\r')) {
      raw = raw.slice(0, -1);
      eol = '\r' + eol;
    }
    if (raw.trim() === '') gap += raw + eol;
    else {
      lines.push({ line: lineNo, raw, eol, gap });
      gap = '';
    }
    start = nl + 1;
  }
  return { lines, trailer: gap };
}

/** Bytes → text. Invalid UTF-8 or NUL bytes make the notebook read-only (a save could not restore the bytes). */
export function decodeBytes(bytes: Uint8Array): { text: string; readonly?: string } {
  if (bytes.subarray(0, 8192).includes(0)) return { text: '', readonly: 'binary data, not a JSONL text file (COA104)' };
  try {
    // ignoreBOM: keep a BOM in the text so it is written back (the core skips it: line 1 is still a record).
    return { text: new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes) };
  } catch {
    return {
      text: new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes),
      readonly: 'not valid UTF-8: saving would change bytes',
    };
  }
}

export function decodeNotebook(bytes: Uint8Array, options: DecodeOptions = {}): NotebookContent {
  const { text, readonly } = decodeBytes(bytes);
  const content = textToNotebook(text, options);
  if (readonly) {
    (content.metadata[META_KEY] as NotebookMeta).readonly = readonly;
    if (text === '') content.cells.push(errorCell({ line: 1, raw: '', eol: '', gap: '' }, 0, 'COA104', readonly, 1));
  }
  return content;
}

/** The notebook for a file's text. */
export function textToNotebook(text: string, options: DecodeOptions = {}): NotebookContent {
  const { lines, trailer } = splitLines(text, options.within?.line);
  // A verl rollout dump (trainer.rollout_data_dir/<step>.jsonl) opens as it is: its rows read as records
  // (src/core/importers/verl-rollouts.ts), read-only since saving would have to write verl's row format back.
  // One dialect for the dump (its run's), not one per answer: an answer that did not search has no tag of its own.
  const verl =
    lines.length > 0 && looksLikeVerlDump(lines[0].raw)
      ? verlLineParser(verlRunDialect(lines.map((l) => dumpRow(l.raw))))
      : undefined;
  const parse = verl ?? parseRecordLine;
  const entries = lines.map((l) => ({ src: l, entry: parse(l.raw, l.line) }));
  const content = linesToNotebook(entries, trailer, options);
  if (verl) (content.metadata[META_KEY] as NotebookMeta).readonly = VERL_DUMP_READONLY;
  return content;
}

export const VERL_DUMP_READONLY =
  'verl rollout dump: read-only here ("CoA: Convert to Trajectories…", or coa convert --from verl-rollouts, makes an editable *.coa.jsonl)';

/**
 * Rewards as the notebook shows them: each record under its own run's scheme (the scheme of its stored `reward`,
 * else the configured one), so a rollout scored with `autocoa` is recomputed with `autocoa` and compared with what
 * its run stored; plus, for records whose own scheme is not the configured one, the recomputation under the
 * configured scheme. Records are scored together per scheme (OTC-GRPO's n is per question across the file).
 */
export interface NotebookRewards {
  own: RewardBreakdown[];
  /** Under the configured scheme, where it differs from the record's own (else undefined). */
  setting: (RewardBreakdown | undefined)[];
}

export function scoreForNotebook(
  records: readonly TrajectoryRecord[],
  scheme: Scheme,
  params: RewardParams,
): NotebookRewards {
  const own: RewardBreakdown[] = new Array(records.length);
  const setting: (RewardBreakdown | undefined)[] = new Array(records.length).fill(undefined);
  const bySchemeIdx = new Map<Scheme, number[]>();
  records.forEach((r, i) => {
    const s = r.reward?.scheme ?? scheme;
    const idx = bySchemeIdx.get(s);
    if (idx) idx.push(i);
    else bySchemeIdx.set(s, [i]);
  });
  for (const [s, idx] of bySchemeIdx) {
    // A stored OTC-GRPO reward names the n its run used (the group's fewest tool calls among correct answers, at
    // that step): such a record is rescored with that n, so a record read alone or among other steps' rollouts of
    // the same question is still compared with its own group's reward.
    const withN = s === 'otc-grpo' ? idx.filter((i) => typeof records[i].reward?.optimal_tool_calls === 'number') : [];
    const alone = new Set(withN);
    const rest = alone.size ? idx.filter((i) => !alone.has(i)) : idx;
    scoreRecords(
      rest.map((i) => records[i]),
      s,
      params,
    ).forEach((b, k) => (own[rest[k]] = b));
    for (const i of withN) {
      const state = new OtcState();
      state.observe(questionKey(records[i]), records[i].reward!.optimal_tool_calls!);
      own[i] = scoreRecords([records[i]], s, params, state)[0];
    }
  }
  const foreign = records.flatMap((r, i) => (r.reward && r.reward.scheme !== scheme ? [i] : []));
  if (foreign.length)
    scoreRecords(
      foreign.map((i) => records[i]),
      scheme,
      params,
    ).forEach((b, k) => (setting[foreign[k]] = b));
  return { own, setting };
}

/** Cells for already-parsed lines (the filter commands reuse this on a subset). */
export function linesToNotebook(
  entries: { src: SourceLine; entry: ReturnType<typeof parseRecordLine> }[],
  trailer: string,
  options: DecodeOptions = {},
): NotebookContent {
  const scheme = options.scheme ?? 'em';
  const params = options.params ?? {};
  const records = entries.flatMap((e) => (e.entry.record ? [e.entry.record] : []));
  // One pass for the whole file: OTC-GRPO's n is the minimum over the file's correct answers to a question.
  const rewards = options.rewards ?? scoreForNotebook(records, scheme, params);
  const cells: CellData[] = [];
  const asked = summarizeQuestions(records);
  // A record view shows one record: a summary of "1 question" would say nothing its header does not.
  if (asked.questions && !options.within) cells.push(summaryCell(asked, records.length));
  let k = 0;
  entries.forEach(({ src, entry }, index) => {
    if (!entry.record) {
      const p = entry.problem!;
      cells.push(
        errorCell(
          src,
          index,
          p.code,
          `${options.source ?? 'line'}:${src.line}:${p.column}: ${p.code} ${p.message}`,
          p.column,
        ),
      );
      return;
    }
    const i = k++;
    cells.push(
      ...recordCells(
        entry.record,
        src,
        index,
        { breakdown: rewards.own[i], setting: rewards.setting[i], params, configured: scheme },
        options.within?.file,
      ),
    );
  });
  const meta: NotebookMeta = { trailer, ...(options.within ? { record: options.within } : {}) };
  return { cells, metadata: { [META_KEY]: meta } };
}

/** The questions view: what a prompt-only dataset (or the prompt-only part of a file) holds. */
function summaryCell(s: QuestionSummary, records: number): CellData {
  const meta: SummaryCellMeta = { kind: 'summary', record: -1, line: 0 };
  const lines = [
    `### Questions`,
    '',
    describeQuestions(s).replace(/^([\d,]+ questions?)/, '**$1**'),
    '',
    s.questions === records
      ? '*A prompt-only dataset: questions and golden answers, no responses yet — train on it or generate rollouts, nothing here has failed.*'
      : `*${(records - s.questions).toLocaleString('en-US')} of the ${records.toLocaleString('en-US')} records have responses; the others are questions waiting for one.*`,
  ];
  if (s.withGolden < s.questions)
    lines.push(
      '',
      `${(s.questions - s.withGolden).toLocaleString('en-US')} question(s) have **no golden answers**: they cannot be scored.`,
    );
  return { kind: 'markup', value: lines.join('\n'), languageId: 'markdown', metadata: { [META_KEY]: meta } };
}

function errorCell(src: SourceLine, record: number, code: string, message: string, column: number): CellData {
  const meta: ErrorCellMeta = {
    kind: 'error',
    record,
    line: src.line,
    eol: src.eol,
    gap: src.gap,
    code,
    message,
    column,
  };
  return {
    kind: 'code',
    value: src.raw,
    languageId: ERROR_LANGUAGE,
    metadata: { [META_KEY]: meta },
    outputs: [
      [
        { mime: 'application/vnd.code.notebook.error', data: { name: code, message } },
        { mime: 'text/plain', data: message },
      ],
    ],
  };
}

function recordCells(
  r: TrajectoryRecord,
  src: SourceLine,
  index: number,
  reward: { breakdown: RewardBreakdown; setting?: RewardBreakdown; params: RewardParams; configured: Scheme },
  file?: string,
): CellData[] {
  const header: HeaderCellMeta = {
    kind: 'header',
    record: index,
    line: src.line,
    raw: src.raw,
    eol: src.eol,
    gap: src.gap,
    id: r.id,
  };
  const cells: CellData[] = [
    {
      kind: 'markup',
      value: headerMarkdown(r, src.line, file),
      languageId: 'markdown',
      metadata: { [META_KEY]: header },
    },
  ];
  // A question has nothing to show but its header: no empty step cell, no reward (one cell per record keeps a
  // 3,000-question dataset at 3,000 cells). A code cell added under the header becomes its response on save.
  if (isQuestion(r)) return cells;
  const report = formatOf(r, reward.params);
  for (const [i, piece] of stepPieces(r.response, report.segments).entries()) {
    const meta: StepCellMeta = { kind: 'step', record: index, line: src.line, index: i, ...piece.meta };
    cells.push({
      kind: 'code',
      value: r.response.slice(piece.meta.start, piece.meta.end),
      languageId: STEP_LANGUAGE,
      metadata: { [META_KEY]: meta },
    });
  }
  const b = reward.breakdown;
  const out: RewardOutput = {
    id: r.id,
    breakdown: b,
    formula: describeFormula(b.scheme, reward.params),
    answer: report.answer,
    golden: r.golden_answers ?? [],
  };
  if (r.reward) {
    out.stored = r.reward;
    // Same scheme by construction (scoreForNotebook): compare what the reward is made of, not float noise.
    out.storedDiffers = Math.abs(r.reward.total - b.total) > 1e-9 || r.reward.format_ok !== b.format_ok;
  }
  if (reward.setting) out.setting = reward.setting;
  cells[cells.length - 1].outputs = [
    [
      { mime: REWARD_MIME, data: out },
      { mime: 'text/plain', data: rewardText(out) },
    ],
  ];
  return cells;
}

type Piece = { meta: Pick<StepCellMeta, 'step' | 'start' | 'end' | 'segmentEnd' | 'tool' | 'block'> };

/**
 * Segments → cell pieces. Whitespace-only text between steps is carried by the step before it (or by the first
 * step when it leads), so every cell is a step and the pieces still partition the response. Always ≥ 1 piece.
 */
export function stepPieces(response: string, segments: readonly Segment[]): Piece[] {
  const pieces: Piece[] = [];
  const leading = 0; // start of whitespace not yet owned by a piece
  for (const s of segments) {
    // Blank prose, or a blank untagged piece of an AutoCoA think block between two steps: not a step of its own.
    const untagged = s.kind === 'text' || (s.kind === 'think' && s.open === null && s.close === null);
    const blankText = untagged && response.slice(s.start, s.end).trim() === '';
    if (blankText) {
      if (pieces.length) pieces[pieces.length - 1].meta.end = s.end;
      continue;
    }
    const start = pieces.length ? s.start : leading;
    const meta: Piece['meta'] = { step: s.kind, start, end: s.end, segmentEnd: s.end };
    if (s.tool !== undefined) meta.tool = s.tool;
    if (s.block !== undefined) meta.block = s.block;
    pieces.push({ meta });
  }
  if (!pieces.length)
    pieces.push({ meta: { step: 'text', start: 0, end: response.length, segmentEnd: response.length } });
  else pieces[pieces.length - 1].meta.end = response.length;
  return pieces;
}

const MD_SPECIAL = /[\\`*_{}[\]()<>#+\-!|~]/g;
function md(text: string): string {
  return text.replace(MD_SPECIAL, (c) => `\\${c}`).replace(/\r?\n/g, ' ');
}

/** The header cell: generated from the record (edits to it are not written back). */
export function headerMarkdown(r: TrajectoryRecord, line: number, file?: string): string {
  const meta = r.meta ?? {};
  const metaParts = (['run', 'stage', 'step', 'sample'] as const)
    .filter((k) => meta[k] !== undefined)
    .map((k) => `${k} **${md(String(meta[k]))}**`);
  const lines = [`### ${md(r.id)}`, '', `**Question:** ${md(r.question)}`, ''];
  if (r.golden_answers?.length) lines.push(`**Golden answers:** ${r.golden_answers.map(md).join(' · ')}`, '');
  // A fork (replay/fork.ts) says what it forked and what that scored, so the two rewards read side by side.
  if (typeof meta.fork_of === 'string') {
    const was =
      typeof meta.fork_of_reward === 'number'
        ? ` — its reward ${meta.fork_of_reward}${typeof meta.fork_of_scheme === 'string' ? ` (${md(meta.fork_of_scheme)})` : ''}`
        : '';
    lines.push(
      `**Fork of** ${md(meta.fork_of)} from step ${Number(meta.fork_step) + 1} (${md(String(meta.fork_step_kind ?? ''))}${meta.fork_edited ? ', edited' : ', as it was'})${was}; the rest regenerated by ${md(String(meta.checkpoint ?? 'the checkpoint').replace(/^.*[\\/](runs[\\/])/, '$1'))}`,
      '',
    );
  }
  lines.push(
    `*line ${line.toLocaleString('en-US')}${file ? ` of ${md(file)}` : ''}${r.dialect ? ` · dialect ${r.dialect}` : ''}${metaParts.length ? ` · ${metaParts.join(' · ')}` : ''}*`,
  );
  // A record view (one record of a file) also says what the scanners find and links its token audit and GRPO group.
  const diagnostics = file ? recordDiagnosticsMarkdown(r) : null;
  if (diagnostics) lines.push('', diagnostics);
  return lines.join('\n');
}

export function rewardText(o: RewardOutput): string {
  const b = o.breakdown;
  const lines = [
    `reward ${b.total} (${b.scheme})  EM ${b.em}  F1 ${b.f1}  format ${b.format_ok ? 'ok' : `errors ${b.violations.join(', ')}`}`,
    `tool calls ${b.tool_calls}${b.optimal_tool_calls !== null ? ` (optimal ${b.optimal_tool_calls})` : ''}  r_tool ${b.r_tool}  r_correct ${b.r_correct}`,
    `answer ${o.answer === null ? '—' : JSON.stringify(o.answer)}  golden ${JSON.stringify(o.golden)}`,
    o.formula,
  ];
  if (o.stored)
    lines.push(
      `stored reward ${o.stored.total} (${o.stored.scheme}, the record's own run)${o.storedDiffers ? ' differs from the recomputed one' : ': recomputed the same'}`,
    );
  if (o.setting) lines.push(`under ${o.setting.scheme} (coaStudio.rewardScheme): ${o.setting.total}`);
  if (!o.golden.length) lines.push('no golden answers: EM and F1 cannot be measured');
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------------------------
// Saving

/** Thrown when a notebook cannot be written back (the message names the cell). */
export class SaveError extends Error {}

/** Notebook → file text. */
export function notebookToText(content: {
  cells: readonly Pick<CellData, 'kind' | 'value' | 'metadata'>[];
  metadata?: { [key: string]: unknown };
}): string {
  const nbMeta = content.metadata?.[META_KEY] as NotebookMeta | undefined;
  if (nbMeta?.readonly) throw new SaveError(`this notebook cannot be saved: ${nbMeta.readonly}`);
  const out: string[] = [];
  let group: { header: HeaderCellMeta; steps: { value: string; meta?: StepCellMeta }[] } | null = null;
  const flush = () => {
    if (group) out.push(group.header.gap, writeRecord(group.header, group.steps), group.header.eol);
    group = null;
  };
  content.cells.forEach((cell) => {
    const meta: CellMeta | undefined = cellMeta(cell.metadata);
    if (meta?.kind === 'header') {
      flush();
      group = { header: meta, steps: [] };
    } else if (meta?.kind === 'error') {
      flush();
      out.push(meta.gap, cell.value, meta.eol);
    } else if (cell.kind === 'code') {
      // A step cell, or a code cell the user added: both extend the record above.
      const step = meta?.kind === 'step' ? meta : undefined;
      if (group)
        (group as { steps: { value: string; meta?: StepCellMeta }[] }).steps.push({ value: cell.value, meta: step });
      else if (cell.value.trim() !== '') out.push('', cell.value.replace(/\r?\n/g, ' '), '\n'); // no record above: a line of its own
    }
    // Markdown cells the user added are notes, not data.
  });
  flush();
  return fixJoins(out, nbMeta?.trailer ?? '');
}

/** [gap, line, eol] triples → text. A line read without terminator (the file's last) gets one if moved up. */
function fixJoins(parts: string[], trailer: string): string {
  const out: string[] = [];
  let open = false; // the text so far ends without a line terminator
  for (let i = 0; i < parts.length; i += 3) {
    const piece = parts[i] + parts[i + 1] + parts[i + 2];
    if (piece === '') continue;
    if (open) out.push('\n');
    out.push(piece);
    open = !piece.endsWith('\n');
  }
  if (open && trailer) out.push('\n');
  // One join at the end: appending to a growing string and testing its end would flatten it every time.
  return out.join('') + trailer;
}

const normEol = (s: string) => s.replace(/\r\n?/g, '\n');

/** A record's line: the original bytes when no step changed, else the original object with the new response. */
export function writeRecord(header: HeaderCellMeta, steps: { value: string; meta?: StepCellMeta }[]): string {
  const bom = header.raw.startsWith('\uFEFF') ? '\uFEFF' : ''; // kept on write, like every other byte of the line
  const original = JSON.parse(header.raw.slice(bom.length)) as { response: string; [k: string]: unknown };
  const before = original.response;
  // An editor may normalise line endings inside a cell; that alone is not an edit.
  const parts = steps.map((s) => {
    if (!s.meta) return s.value;
    const was = before.slice(s.meta.start, s.meta.end);
    return s.value === was || normEol(s.value) === normEol(was) ? was : s.value;
  });
  const response = parts.join('');
  if (response === before) return header.raw;
  const edited: { [k: string]: unknown } = { ...original, response };
  // Token ids, masks and offsets describe the old text and the stored reward scored it: both would now lie.
  delete edited.tokens;
  delete edited.reward;
  return bom + JSON.stringify(edited);
}

export function encodeNotebook(content: Parameters<typeof notebookToText>[0]): Uint8Array {
  return new TextEncoder().encode(notebookToText(content));
}
