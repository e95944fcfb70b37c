// Which options a record is format-checked with: the one rule `coa validate`, the language server, the notebook
// and every reward share, so the four give the same codes for the same record (a surface that re-detected the
// dialect would check a `dialect: "coa"` rollout whose simulated observation holds a <tool_call> as Hermes). A
// record's own `dialect` field wins over the configured one (a setting or --dialect): the trainer writes the dialect
// it generated in, and detection is only a guess for records that do not say.
import type { DialectName } from './dialects';
import type { FormatOptions } from './rules';

export function recordFormatOptions<T extends FormatOptions>(record: { dialect?: DialectName }, base: T): T {
  return record.dialect === undefined || record.dialect === base.dialect ? base : { ...base, dialect: record.dialect };
}
