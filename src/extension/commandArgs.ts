// A command's arguments arrive as `unknown` (the palette gives none; a script, a test or another extension gives
// what it likes), so a command that takes data checks it by schema before handing it on: a wrong argument is said
// with its field rather than failing somewhere later in the feature. No vscode import (unit-tested).
import type { z } from 'zod';

/** `arg` checked by `schema`: its value (undefined when none was given: the command asks), or the problem found. */
export function commandArgument<T>(schema: z.ZodType<T>, arg: unknown): { value: T | undefined } | { problem: string } {
  if (arg === undefined) return { value: undefined };
  const parsed = schema.safeParse(arg);
  if (parsed.success) return { value: parsed.data };
  const issue = parsed.error.issues[0];
  return { problem: `${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}` };
}
