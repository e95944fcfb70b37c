// `coa convert --from verl-parquet|verl-rollouts|search-r1|openai <in> -o <out>`: the core's conversion
// (src/core/convert.ts, also behind the editor's "CoA: Convert to Trajectories…") written to a file.
import { CONVERT_SOURCES, ConvertError, convertInput, type ConvertSource } from '../core/convert';
import { CliError, ParsedArgs } from './args';
import { LineWriter } from './output';

export async function runConvert(args: ParsedArgs): Promise<number> {
  const from = args.flags.from as string | undefined;
  const [input, ...extra] = args.positional;
  const output = (args.flags.o ?? args.flags.output) as string | undefined;
  if (!from || !(CONVERT_SOURCES as readonly string[]).includes(from))
    throw new CliError(`convert: --from must be one of ${CONVERT_SOURCES.join(', ')}`);
  if (!input || extra.length) throw new CliError('convert: give exactly one input file');
  if (!output) throw new CliError('convert: give the output file with -o <out.coa.jsonl>');

  let result;
  try {
    result = await convertInput(from as ConvertSource, input, {
      strictIds: args.flags['strict-ids'] === true,
      log: (line) => console.error(line),
    });
  } catch (e) {
    if (e instanceof ConvertError) throw new CliError(e.message);
    throw e;
  }
  const { records, skipped } = result;
  const out = new LineWriter(output);
  for (const r of records) await out.write(JSON.stringify(r));
  await out.close();
  console.error(
    `convert: ${records.length} records written to ${output}${skipped ? `, ${skipped} lines skipped` : ''}`,
  );
  return skipped > 0 && records.length === 0 ? 1 : 0;
}
