// `coa data prepare questions|sft|pairs <file…> --out <out.jsonl>` and `coa data check <run-config.json>`: the
// trainer's only way into users' data (docs/training.md, "Data contract"). Bad data → one line
// `FILE:LINE:COL: error: FIELD: message`, exit 2, nothing written (output goes to a temp file, renamed at the end).
import { writeFileSync } from 'node:fs';
import { checkRunConfig } from '../core/data/check';
import { DataError } from '../core/data/errors';
import { buildPairs, emptyPairReport, PairRecord, readPairInputs } from '../core/data/pairs';
import { emptyIdReport, idSummary } from '../core/data/ids';
import { readQuestions } from '../core/data/questions';
import { DialectChoice, emptySftSummary, isDialectChoice, readSft, SftRecord } from '../core/data/sft';
import { DIALECT_NAMES } from '../core/dialects';
import { isOverride } from '../core/overrides';
import { CliError, parseArgs } from './args';
import { requireFile } from './common';
import { LineWriter } from './output';
import { describeFsError } from '../core/fsErrors';

const PREPARE_FLAGS = {
  out: 'string',
  o: 'string',
  dialect: 'string',
  report: 'string',
  'per-question': 'number',
  'strict-ids': 'boolean',
} as const;

export async function runDataCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  try {
    if (sub === 'prepare') {
      const [kind, ...more] = rest;
      const args = parseArgs(more, PREPARE_FLAGS);
      if (kind === 'questions' || kind === 'sft' || kind === 'pairs')
        return await prepare(kind, args.positional, args.flags);
      throw new CliError('data prepare: give questions, sft or pairs (try: coa --help)');
    }
    if (sub === 'check') {
      const args = parseArgs(rest, { json: 'boolean' });
      const [files, overrides] = [args.positional.filter((a) => !isOverride(a)), args.positional.filter(isOverride)];
      if (files.length !== 1) throw new CliError('data check: give one run config file (and key=value overrides)');
      const result = await checkRunConfig(files[0], overrides);
      if (args.flags.json) console.log(JSON.stringify(result, null, 2));
      else printCheck(result);
      return 0;
    }
    throw new CliError('data: give prepare or check (try: coa --help)');
  } catch (e) {
    if (e instanceof DataError) {
      console.error(e.message);
      return 2;
    }
    throw e;
  }
}

type Flags = Record<string, string | number | boolean | undefined>;

async function prepare(kind: 'questions' | 'sft' | 'pairs', files: string[], flags: Flags): Promise<number> {
  const out = (flags.out ?? flags.o) as string | undefined;
  if (!out) throw new CliError(`data prepare ${kind}: give the output file with --out <out.jsonl>`);
  if (files.length === 0 || (kind !== 'pairs' && files.length > 1))
    throw new CliError(
      `data prepare ${kind}: give ${kind === 'pairs' ? 'one or more input files' : 'exactly one input file'}`,
    );
  const dialect = (flags.dialect as string | undefined) ?? 'auto';
  if (!isDialectChoice(dialect))
    throw new CliError(`unknown dialect "${dialect}" (known: ${DIALECT_NAMES.join(', ')}, auto)`);
  const perQuestion = (flags['per-question'] as number | undefined) ?? 1;
  if (!Number.isInteger(perQuestion) || perQuestion < 1)
    throw new CliError('--per-question must be a positive integer');
  for (const f of files) requireFile(f);

  const writer = new LineWriter(out);
  let summary: object;
  try {
    if (kind === 'questions') summary = await prepareQuestions(files[0], writer, flags['strict-ids'] === true);
    else if (kind === 'sft') summary = await prepareSft(files[0], dialect, writer);
    else summary = await preparePairs(files, dialect, perQuestion, writer);
    await writer.close();
  } catch (e) {
    writer.abort();
    throw e;
  }
  const line = JSON.stringify({ kind, out, ...summary });
  if (flags.report) {
    try {
      writeFileSync(flags.report as string, `${line}\n`);
    } catch (e) {
      throw new CliError(`cannot write ${flags.report as string}: ${describeFsError(e)}`);
    }
  }
  console.error(line);
  return 0;
}

async function prepareQuestions(file: string, writer: LineWriter, strictIds: boolean): Promise<object> {
  let records = 0;
  const sources: Record<string, number> = {};
  const ids = emptyIdReport();
  for await (const q of readQuestions(file, { strictIds, ids })) {
    records++;
    const s = q.data_source ?? '(none)';
    sources[s] = (sources[s] ?? 0) + 1;
    await writer.write(JSON.stringify(q));
  }
  if (records === 0) throw new DataError(file, 1, 1, 'record', 'no questions in this file');
  const line = idSummary(ids);
  if (line) console.error(`${file}: ${line}`);
  return { records, data_sources: sources, ids };
}

async function prepareSft(file: string, dialect: DialectChoice, writer: LineWriter): Promise<object> {
  const summary = emptySftSummary();
  for await (const r of readSft(file, dialect, summary)) await writer.write(JSON.stringify(r));
  if (summary.records === 0) throw new DataError(file, 1, 1, 'record', 'no trajectories in this file');
  return summary;
}

async function preparePairs(
  files: string[],
  dialect: DialectChoice,
  perQuestion: number,
  writer: LineWriter,
): Promise<object> {
  const report = emptyPairReport();
  const given: PairRecord[] = [];
  const trajectories: SftRecord[] = [];
  for (const file of files) {
    for await (const input of readPairInputs(file, dialect, report)) {
      if ('pair' in input) given.push(input.pair);
      else trajectories.push(input.trajectory);
    }
  }
  const built = buildPairs(trajectories, perQuestion, report);
  for (const p of [...given, ...built]) await writer.write(JSON.stringify(p));
  if (report.pairs === 0)
    throw new DataError(
      files[0],
      1,
      1,
      'record',
      `no pairs: ${JSON.stringify(report.skipped_questions)} questions skipped (a pair needs a correct and an incorrect trajectory of one question)`,
    );
  return report;
}

function printCheck(r: Awaited<ReturnType<typeof checkRunConfig>>): void {
  if (!r.data) console.log(`${r.config}: no data section — the embedded benchmark`);
  for (const f of r.files) {
    console.log(
      `${f.key}: ${f.path}: ${f.kind === 'model' ? 'model directory ok' : `${f.count} ${f.kind === 'corpus' ? 'passages' : f.kind === 'pairs' ? 'pairs' : f.kind === 'sft' ? 'trajectories' : 'questions'}`}${f.summary ? ` ${JSON.stringify(f.summary)}` : ''}`,
    );
    const ids = f.ids && idSummary(f.ids);
    if (ids) console.log(`${f.key}: ${ids}`);
  }
  if (r.built_pairs) console.log(`SFT-1 pairs built from data.sft: ${JSON.stringify(r.built_pairs)}`);
  for (const w of r.warnings) console.log(`warning: ${w}`);
  console.log(r.warnings.length ? `data check: ok, ${r.warnings.length} warning(s)` : 'data check: ok');
}
