// Skipped tests, read from each runner's own report and judged: `npm test` prints every skip with its reason and
// counts it; under CI (CI=true, set by .ci/run) a skip fails its suite unless test/skip-allowlist.json lists it with a
// reason — a test that skips because a prerequisite is missing would otherwise hide a broken tree behind a green line.
// The Python suites apply the same list inside pytest (test/skip_policy.py), so a refused skip fails as a test there.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const ALLOWLIST = join(import.meta.dirname, '..', 'test', 'skip-allowlist.json');

/** CI=true (or 1 / yes), as .ci/run and the usual CI services set it. */
export function underCI(env = process.env) {
  return ['1', 'true', 'yes'].includes(
    String(env.CI ?? '')
      .trim()
      .toLowerCase(),
  );
}

const unescapeTap = (s) => s.replace(/\\([\\#])/g, '$1');

/**
 * Skipped and todo tests of a TAP report (node:test's tap reporter): `{ test, reason }`, the test named with its
 * parents (`parent > child`), the reason as given to `t.skip(…)` / `{ skip: … }` (todo: `todo: …`).
 */
export function tapSkips(text) {
  const parents = [];
  const out = [];
  for (const line of text.split('\n')) {
    const sub = /^(\s*)# Subtest: (.*)$/.exec(line);
    if (sub) {
      parents.length = sub[1].length / 4;
      parents.push(sub[2]);
      continue;
    }
    const result = /^(\s*)(?:not )?ok \d+ - (.*) # (SKIP|TODO)\b ?(.*)$/.exec(line);
    if (!result) continue;
    const depth = result[1].length / 4;
    const name = [...parents.slice(0, depth), unescapeTap(result[2])].join(' > ');
    const reason = unescapeTap(result[4].trim());
    out.push({
      test: name,
      reason: result[3] === 'TODO' ? `todo: ${reason || '(no reason given)'}` : reason || '(no reason given)',
    });
  }
  return out;
}

const xmlText = (s) =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#10;/g, '\n')
    .replace(/&amp;/g, '&');

/** Skipped tests of a pytest JUnit XML report (junit_family=xunit1, which names each test's file). */
export function junitSkips(xml) {
  const out = [];
  for (const m of xml.matchAll(/<testcase ([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const skipped = /<skipped\b([^>]*)\/?>/.exec(m[2] ?? '');
    if (!skipped) continue;
    const attr = (src, k) => xmlText((new RegExp(`\\b${k}="([^"]*)"`).exec(src) ?? [])[1] ?? '');
    out.push({
      test: attr(m[1], 'name'),
      file: attr(m[1], 'file') || undefined,
      reason: attr(skipped[1], 'message') || '(no reason given)',
    });
  }
  return out;
}

/** test/skip-allowlist.json's entries (a missing or broken file is an error: it is the policy). */
export function readAllowList(file = ALLOWLIST) {
  if (!existsSync(file)) throw new Error(`${file}: missing (the list of skips CI accepts)`);
  const parsed = JSON.parse(readFileSync(file, 'utf8'));
  if (!Array.isArray(parsed.skips)) throw new Error(`${file}: expected {"skips": [...]}`);
  for (const [i, e] of parsed.skips.entries()) {
    for (const k of ['suite', 'test', 'reason'])
      if (typeof e[k] !== 'string' || !e[k].trim())
        throw new Error(`${file}: skips[${i}].${k} must be a non-empty string`);
  }
  return parsed.skips;
}

/** Same file, however the runner wrote the path (pytest's are relative to its rootdir). */
const sameFile = (a, b) => !a || !b || a === b || a.endsWith(`/${b}`) || b.endsWith(`/${a}`);

/** The allow-list entry that covers a skip of `suite`, if any. */
export function allowedBy(allow, suite, skip) {
  return allow.find((e) => e.suite === suite && e.test === skip.test && sameFile(e.file, skip.file));
}
