// `coa score`: fill each record's `reward`. Two streaming passes: the first collects OTC-GRPO's per-question
// minimum over correct trajectories of the whole file, the second scores and writes. Bad lines are copied
// through verbatim (and reported), so nothing is lost.
import { readJsonl } from '../core/jsonl';
import { OtcState, scoreRecords } from '../core/rewards';
import { SCHEMES, Scheme } from '../core/record';
import { CliError, ParsedArgs } from './args';
import { requireFile, rewardParams } from './common';
import { LineWriter } from './output';

export async function runScore(args: ParsedArgs): Promise<number> {
  const [file, ...extra] = args.positional;
  if (!file || extra.length) throw new CliError('score: give exactly one input file');
  requireFile(file);
  const scheme = (args.flags.scheme as string | undefined) ?? 'em';
  if (!(SCHEMES as readonly string[]).includes(scheme))
    throw new CliError(`unknown scheme "${scheme}" (known: ${SCHEMES.join(', ')})`);
  const params = rewardParams(args);

  let state: OtcState | undefined;
  if (scheme === 'otc-grpo') {
    state = new OtcState();
    for await (const e of readJsonl(file)) if (e.record) scoreRecords([e.record], 'otc-grpo', params, state);
  }

  const out = new LineWriter((args.flags.o ?? args.flags.output) as string | undefined);
  let scored = 0;
  let bad = 0;
  let total = 0;
  try {
    for await (const e of readJsonl(file)) {
      if (!e.record) {
        bad++;
        console.error(
          `${file}:${e.line}:${e.problem!.column}: error ${e.problem!.code} ${e.problem!.message} (copied unchanged)`,
        );
        if (e.problem!.code === 'COA104') throw new CliError(`${file}: binary data, not a JSONL text file`);
        await out.write(e.bytes ?? e.raw); // invalid UTF-8: the original bytes, not the lossy decoding
        continue;
      }
      const [reward] = scoreRecords([e.record], scheme as Scheme, params, state);
      total += reward.total;
      scored++;
      await out.write(JSON.stringify({ ...e.record, reward }));
    }
    await out.close();
  } catch (err) {
    out.abort();
    throw err;
  }
  console.error(
    `score: ${scored} records scored with ${scheme} (mean total ${(scored ? total / scored : 0).toFixed(4)}), ${bad} bad lines copied`,
  );
  return 0;
}
