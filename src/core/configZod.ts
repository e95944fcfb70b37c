// zod as the run config uses it (`import * as z from './configZod'`): the same API, except that every number it
// makes is a setting with a finite range. A number a run config holds is never NaN or ±Infinity (zod's own rule; in
// Python `1e999` reads as infinity, and an `lr` of infinity trained every weight to NaN) and never beyond
// ±SETTING_LIMIT; a setting with a narrower sane range (a learning rate, a coefficient, a time) declares it with
// `.min()`/`.max()` on top. The bounds reach the JSON schema as minimum/maximum, which the trainer validates against
// (a Python float of 1e999 or 1e300 is above every maximum), so one rule holds in the editor, `coa data check` and the
// trainer. A field added later gets it by writing `z.number()` like any other; scripts/gen-schemas.ts refuses to
// write a run-config schema with an unbounded number anywhere (a number made some other way).
import { z as zod } from 'zod';

export * from 'zod';

/** The largest magnitude of any number in a run config: the largest integer both JavaScript and Python hold exactly. */
export const SETTING_LIMIT = Number.MAX_SAFE_INTEGER;

/** A number setting: finite, within ±SETTING_LIMIT. */
export function number(params?: Parameters<typeof zod.number>[0]): zod.ZodNumber {
  return zod.number(params).min(-SETTING_LIMIT).max(SETTING_LIMIT);
}

/** An integer setting (zod's int() is already bounded by the safe-integer range, which is SETTING_LIMIT). */
export function int(params?: Parameters<typeof zod.int>[0]): zod.ZodInt {
  return zod.int(params).min(-SETTING_LIMIT).max(SETTING_LIMIT);
}
