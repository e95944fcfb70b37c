// Shared CLI plumbing: reading inputs safely and turning flags into core options.
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { describeFsError } from '../core/fsErrors';
import { guessSource, SOURCE_INFO } from '../core/convert';
import { DIALECT_NAMES, isDialectName } from '../core/dialects';
import type { FormatOptions } from '../core/rules';
import type { RewardParams } from '../core/rewards';
import { CliError, ParsedArgs } from './args';

export function requireFile(path: string): void {
  let st;
  try {
    st = statSync(path);
  } catch (e) {
    // ENOENT keeps its short words; a loop of links, a path through a file, a directory we may not search: said.
    throw new CliError(
      `${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : describeFsError(e)}`,
    );
  }
  if (st.isDirectory()) throw new CliError(`${path}: is a directory, expected a file`);
}

export function formatOptions(args: ParsedArgs): FormatOptions & { dialect: FormatOptions['dialect'] } {
  const dialect = args.flags.dialect as string | undefined;
  if (dialect !== undefined && dialect !== 'auto' && !isDialectName(dialect)) {
    throw new CliError(`unknown dialect "${dialect}" (known: ${DIALECT_NAMES.join(', ')}, auto)`);
  }
  const tools = args.flags.tools as string | undefined;
  return {
    dialect: (dialect as FormatOptions['dialect']) ?? 'auto',
    strictness: args.flags.strict ? 'strict' : 'lenient',
    tools: tools
      ? tools
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean)
      : undefined,
    maxTurns: args.flags['max-turns'] as number | undefined,
    complete: !args.flags.incomplete,
  };
}

export function rewardParams(args: ParsedArgs): RewardParams {
  const f = formatOptions(args);
  return {
    ...(args.flags.c !== undefined ? { c: args.flags.c as number } : {}),
    ...(args.flags.alpha !== undefined ? { alpha: args.flags.alpha as number } : {}),
    ...(args.flags['no-format-penalty'] ? { format_penalty: false } : {}),
    strictness: f.strictness,
    ...(f.tools ? { tools: [...f.tools] } : {}),
    ...(f.maxTurns !== undefined ? { max_turns: f.maxTurns } : {}),
    dialect: f.dialect ?? 'auto',
  };
}

/**
 * When `file` is another engine's file rather than trajectory JSONL (a verl parquet, Search-R1 transcripts, OpenAI
 * chats, a verl rollout dump), the one line saying which `coa convert` makes it one; null otherwise. `validate` and
 * `stats` used to answer a parquet with "binary data" and a transcript with a page of invalid-JSON errors.
 */
export function convertHint(file: string): string | null {
  const buf = Buffer.alloc(4096);
  let n = 0;
  try {
    const fd = openSync(file, 'r');
    try {
      n = readSync(fd, buf, 0, buf.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
  const head = buf.subarray(0, n);
  const parquet = head.subarray(0, 4).toString('latin1') === 'PAR1';
  const source = parquet ? 'verl-parquet' : guessSource(file, head.toString('utf8'));
  if (!source) return null;
  return `this is a ${SOURCE_INFO[source].label} file, not trajectory JSONL: convert it first with \`coa convert --from ${source} ${file} -o ${file.replace(/\.(parquet|jsonl|json|txt)$/i, '')}.coa.jsonl\``;
}
