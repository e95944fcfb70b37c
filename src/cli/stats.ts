// `coa stats`: the papers' table columns over one or more files, overall, per dialect and per meta.stage.
import { readJsonl } from '../core/jsonl';
import { OtcState, scoreRecords } from '../core/rewards';
import { SCHEMES, Scheme, isQuestion } from '../core/record';
import { detectDialect } from '../core/dialects';
import { StatsAccumulator, formatStatsTable } from '../core/stats';
import { CliError, ParsedArgs } from './args';
import { convertHint, requireFile, rewardParams } from './common';

export async function runStats(args: ParsedArgs): Promise<number> {
  if (args.positional.length === 0) throw new CliError('stats: give one or more files');
  const scheme = ((args.flags.scheme as string | undefined) ?? 'em') as Scheme;
  if (!SCHEMES.includes(scheme)) throw new CliError(`unknown scheme "${scheme}" (known: ${SCHEMES.join(', ')})`);
  const params = rewardParams(args);
  const acc = new StatsAccumulator();
  let bad = 0;
  // Questions (a converted verl parquet, a prompt-only dataset) are data, not failed trajectories: counted apart.
  let questions = 0;
  // Trajectories without golden answers: their EM is undefined, not 0.
  let ungraded = 0;
  // Files of another engine's format (a parquet, transcripts): said on stderr with the `coa convert` to run.
  let unreadable = 0;
  for (const file of args.positional) {
    requireFile(file);
    const hint = convertHint(file);
    if (hint) {
      console.error(`${file}: ${hint}`);
      unreadable++;
      continue;
    }
    const state = new OtcState();
    for await (const e of readJsonl(file)) {
      if (!e.record) {
        bad++;
        continue;
      }
      if (isQuestion(e.record)) {
        questions++;
        continue;
      }
      const [b] = scoreRecords([e.record], scheme, params, state);
      const dialect =
        e.record.dialect ??
        (params.dialect && params.dialect !== 'auto' ? params.dialect : detectDialect(e.record.response));
      const graded = (e.record.golden_answers ?? []).length > 0;
      if (!graded) ungraded++;
      acc.add(b, { dialect, stage: e.record.meta?.stage }, graded);
    }
  }
  const rows = acc.rows();
  if (args.flags.json) console.log(JSON.stringify({ scheme, rows, bad_lines: bad, questions, ungraded }, null, 2));
  else if (rows.length || !unreadable) {
    console.log(formatStatsTable(rows));
    if (questions) console.log(`(${questions} questions without a response skipped: they have no trajectory to score)`);
    if (ungraded)
      console.log(
        `(${ungraded} trajectories without golden answers: EM, F1 and TP are over the other ${rows[0].graded}${rows[0].graded ? '' : ' — n/a'})`,
      );
    if (bad) console.log(`(${bad} bad lines skipped: run coa validate)`);
  }
  return unreadable === args.positional.length ? 2 : 0;
}
