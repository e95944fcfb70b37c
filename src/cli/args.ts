// Minimal flag parser: `--name value`, `--name=value`, boolean `--flag`, `-o value`; everything else is positional.
export class CliError extends Error {}

type FlagType = 'string' | 'number' | 'boolean';
export interface ParsedArgs {
  positional: string[];
  flags: Record<string, string | number | boolean | undefined>;
}

export function parseArgs(argv: string[], spec: Record<string, FlagType>): ParsedArgs {
  const positional: string[] = [];
  const flags: ParsedArgs['flags'] = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('-') || arg === '-') {
      positional.push(arg);
      continue;
    }
    const [name, inline] = arg.replace(/^--?/, '').split(/=(.*)/s, 2);
    const type = spec[name];
    if (!type)
      throw new CliError(
        `unknown option ${arg.split('=')[0]} (known: ${Object.keys(spec)
          .map((k) => (k.length === 1 ? `-${k}` : `--${k}`))
          .join(', ')})`,
      );
    if (type === 'boolean') {
      flags[name] = true;
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new CliError(`option ${arg} needs a value`);
    if (type === 'number') {
      const n = Number(value);
      if (!Number.isFinite(n)) throw new CliError(`option ${arg} expects a number, got "${value}"`);
      flags[name] = n;
    } else flags[name] = value;
  }
  return { positional, flags };
}
