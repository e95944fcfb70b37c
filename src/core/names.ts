// The one naming rule for run ids, stage ids and stage labels: they become directory names (runs/<id>/,
// stages/<label>/), URL segments (/v1/runs/<run>/otc-state) and keys in events, so they must be plain path
// segments on every OS — no separators, no `..`, never absolute, bounded length. The trainer reads the same rule
// from schemas/names.json (scripts/gen-schemas.ts), so Python and TypeScript cannot drift.

export const NAME_MAX_LENGTH = 128;
/** ECMAScript and Python `re` read this pattern the same way (no flags, ASCII classes, one lookahead). */
export const NAME_PATTERN = `^(?!.*\\.\\.)[A-Za-z0-9][A-Za-z0-9._-]{0,${NAME_MAX_LENGTH - 1}}$`;
export const NAME_RE = new RegExp(NAME_PATTERN);
export const NAME_RULE_TEXT = `1-${NAME_MAX_LENGTH} characters of A-Z a-z 0-9 . _ -, starting with a letter or digit, without ".."`;

/** Why `value` is not a valid name (null when it is); `what` names it in the message (`run id`, `--label`). */
export function nameError(what: string, value: string): string | null {
  return NAME_RE.test(value) ? null : `${what} ${JSON.stringify(value)} is not a valid name: ${NAME_RULE_TEXT}`;
}

export function isValidName(value: string): boolean {
  return NAME_RE.test(value);
}

/** What scripts/gen-schemas.ts writes to schemas/names.json for the trainer. */
export const NAME_RULE = { pattern: NAME_PATTERN, max_length: NAME_MAX_LENGTH, description: NAME_RULE_TEXT };
