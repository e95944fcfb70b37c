// Shared CLI plumbing: reading inputs safely and turning flags into core options.
import { existsSync, statSync } from 'node:fs';
import { DIALECT_NAMES, isDialectName } from '../core/dialects';
import type { FormatOptions } from '../core/rules';
import type { RewardParams } from '../core/rewards';
import { CliError, ParsedArgs } from './args';

export function requireFile(path: string): void {
  if (!existsSync(path)) throw new CliError(`${path}: no such file`);
  if (statSync(path).isDirectory()) throw new CliError(`${path}: is a directory, expected a file`);
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
    tools: tools ? tools.split(',').map((t) => t.trim()).filter(Boolean) : undefined,
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
