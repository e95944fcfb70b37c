// `coa stats`: the papers' table columns over one or more files, overall, per dialect and per meta.stage.
import { readJsonl } from '../core/jsonl';
import { OtcState, scoreRecords } from '../core/rewards';
import { SCHEMES, Scheme, isQuestion } from '../core/record';
import { detectDialect } from '../core/dialects';
import { StatsAccumulator, formatStatsTable } from '../core/stats';
import { CliError, ParsedArgs } from './args';
import { requireFile, rewardParams } from './common';

export async function runStats(args: ParsedArgs): Promise<number> {
  if (args.positional.length === 0) throw new CliError('stats: give one or more files');
  const scheme = ((args.flags.scheme as string | undefined) ?? 'em') as Scheme;
  if (!SCHEMES.includes(scheme)) throw new CliError(`unknown scheme "${scheme}" (known: ${SCHEMES.join(', ')})`);
  const params = rewardParams(args);
  const acc = new StatsAccumulator();
  let bad = 0;
  // Questions (a converted verl parquet, a prompt-only dataset) are data, not failed trajectories: counted apart.
  let questions = 0;
  for (const file of args.positional) {
    requireFile(file);
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
      const dialect = e.record.dialect ?? (params.dialect && params.dialect !== 'auto' ? params.dialect : detectDialect(e.record.response));
      acc.add(b, { dialect, stage: e.record.meta?.stage });
    }
  }
  const rows = acc.rows();
  if (args.flags.json) console.log(JSON.stringify({ scheme, rows, bad_lines: bad, questions }, null, 2));
  else {
    console.log(formatStatsTable(rows));
    if (questions) console.log(`(${questions} questions without a response skipped: they have no trajectory to score)`);
    if (bad) console.log(`(${bad} bad lines skipped: run coa validate)`);
  }
  return 0;
}
