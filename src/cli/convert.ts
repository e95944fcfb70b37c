// `coa convert --from verl-parquet|verl-rollouts|search-r1|openai <in> -o <out>`.
import { DataError } from '../core/data/errors';
import { emptyIdReport, idSummary } from '../core/data/ids';
import { importVerlParquet } from '../core/importers/verl-parquet';
import { importSearchR1Transcripts } from '../core/importers/search-r1';
import { conversationToRecord } from '../core/importers/openai';
import type { TrajectoryRecord } from '../core/record';
import { CliError, ParsedArgs } from './args';
import { readTextInput, requireFile } from './common';
import { LineWriter } from './output';
import { convertVerlRollouts } from './convertVerl';

const SOURCES = ['verl-parquet', 'verl-rollouts', 'search-r1', 'openai'] as const;

export async function runConvert(args: ParsedArgs): Promise<number> {
  const from = args.flags.from as string | undefined;
  const [input, ...extra] = args.positional;
  const output = (args.flags.o ?? args.flags.output) as string | undefined;
  if (!from || !(SOURCES as readonly string[]).includes(from)) throw new CliError(`convert: --from must be one of ${SOURCES.join(', ')}`);
  if (!input || extra.length) throw new CliError('convert: give exactly one input file');
  if (!output) throw new CliError('convert: give the output file with -o <out.coa.jsonl>');
  if (from !== 'verl-rollouts') requireFile(input); // verl-rollouts takes a dump directory too

  let records: TrajectoryRecord[] = [];
  let skipped = 0;
  if (from === 'verl-rollouts') {
    ({ records, skipped } = convertVerlRollouts(input));
  } else if (from === 'verl-parquet') {
    const ids = emptyIdReport();
    try {
      records = await importVerlParquet(input, { strictIds: args.flags['strict-ids'] === true, ids });
    } catch (e) {
      if (e instanceof DataError) throw new CliError(e.message);
      throw new CliError(`${input}: not a readable parquet file (${(e as Error).message})`);
    }
    const line = idSummary(ids);
    if (line) console.error(`${input}: ${line}`);
  } else {
    const text = readTextInput(input);
    if (text.includes('\u0000')) throw new CliError(`${input}: binary data, not a text file`);
    if (from === 'search-r1') records = importSearchR1Transcripts(text);
    else {
      text.split('\n').forEach((line, i) => {
        if (!line.trim()) return;
        try {
          records.push(conversationToRecord(JSON.parse(line), i));
        } catch (e) {
          skipped++;
          console.error(`${input}:${i + 1}:1: error ${(e as Error).message} (line skipped)`);
        }
      });
    }
  }
  const out = new LineWriter(output);
  for (const r of records) await out.write(JSON.stringify(r));
  await out.close();
  console.error(`convert: ${records.length} records written to ${output}${skipped ? `, ${skipped} lines skipped` : ''}`);
  return skipped > 0 && records.length === 0 ? 1 : 0;
}
