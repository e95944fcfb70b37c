// The `coaStudio.*` settings the server reads, and how they turn into the core's format options and reward
// parameters. Bad values are ignored field by field (a typo in settings.json must not switch the server off).
import { z } from 'zod';
import { DIALECT_NAMES, DialectName } from '../core/dialects';
import { SCHEMES, Scheme } from '../core/record';
import type { FormatOptions } from '../core/rules';
import { recordFormatOptions } from '../core/recordFormat';
import type { RewardParams } from '../core/rewards';
import type { Strictness } from '../core/codes';
import { settingDefault } from '../core/settingDefaults';

export interface Settings {
  dialect: DialectName | 'auto';
  rewardScheme: Scheme;
  otc: { c: number; alpha: number };
  tools: string[];
  strictness: Strictness;
  envServer: { url: string; token: string };
}

/** The manifest's defaults (package.json contributes.configuration, via src/core/settingDefaults.ts). */
export const DEFAULT_SETTINGS: Settings = {
  dialect: settingDefault('dialect') as Settings['dialect'],
  rewardScheme: settingDefault('rewardScheme') as Scheme,
  otc: { c: settingDefault('otc.c'), alpha: settingDefault('otc.alpha') },
  tools: settingDefault('tools'),
  strictness: settingDefault('strictness') as Strictness,
  envServer: { url: settingDefault('envServer.url'), token: settingDefault('envServer.token') },
};

const fields = {
  dialect: z.enum([...DIALECT_NAMES, 'auto']),
  rewardScheme: z.enum(SCHEMES),
  c: z.number().positive(),
  alpha: z.number(),
  tools: z.array(z.string().min(1)).min(1),
  strictness: z.enum(['lenient', 'strict']),
  url: z.string(),
  token: z.string(),
};

function pick<T>(schema: z.ZodType<T>, value: unknown, fallback: T): T {
  const r = schema.safeParse(value);
  return r.success ? r.data : fallback;
}

/** The `coaStudio` section as VS Code returns it (dotted keys already nested). */
export function parseSettings(section: unknown): Settings {
  const s = (typeof section === 'object' && section !== null ? section : {}) as Record<string, any>;
  const otc = (typeof s.otc === 'object' && s.otc !== null ? s.otc : {}) as Record<string, unknown>;
  const env = (typeof s.envServer === 'object' && s.envServer !== null ? s.envServer : {}) as Record<string, unknown>;
  const d = DEFAULT_SETTINGS;
  return {
    dialect: pick(fields.dialect, s.dialect, d.dialect),
    rewardScheme: pick(fields.rewardScheme, s.rewardScheme, d.rewardScheme),
    otc: {
      c: pick(fields.c, otc.c ?? s['otc.c'], d.otc.c),
      alpha: pick(fields.alpha, otc.alpha ?? s['otc.alpha'], d.otc.alpha),
    },
    tools: pick(fields.tools, s.tools, d.tools),
    strictness: pick(fields.strictness, s.strictness, d.strictness),
    envServer: {
      url: pick(fields.url, env.url, d.envServer.url),
      token: pick(fields.token, env.token, d.envServer.token),
    },
  };
}

/** The settings' format options; a record's own dialect wins over the setting (core/recordFormat.ts). */
export function formatOptions(s: Settings, recordDialect?: DialectName): FormatOptions {
  return recordFormatOptions(
    { dialect: recordDialect },
    { dialect: s.dialect, strictness: s.strictness, tools: s.tools },
  );
}

export function rewardParams(s: Settings): RewardParams {
  return { c: s.otc.c, alpha: s.otc.alpha, strictness: s.strictness, tools: s.tools, dialect: s.dialect };
}
