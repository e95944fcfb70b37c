// Runs the shared, language-neutral vectors in test/conformance/ against the TypeScript core.
// The Python trainer runs the same files (src/trainer/tests/test_conformance.py).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkFormat, FormatOptions } from '../../../src/core/rules';
import { scoreRecords, RewardParams } from '../../../src/core/rewards';
import { coverExactMatch, exactMatch, f1Score, normalizeAnswer } from '../../../src/core/answer';
import { parseEvent } from '../../../src/core/events';
import { isQuestion, type Scheme, type TrajectoryRecord } from '../../../src/core/record';
import { analyzeLine } from '../../../src/server/analysis';
import { DEFAULT_SETTINGS, formatOptions, rewardParams } from '../../../src/server/settings';
import { RULES } from '../../../src/core/codes';
import { textToNotebook } from '../../../src/extension/providers/notebook/codec';
import { notebookDiagnostics } from '../../../src/extension/providers/notebook/diagnostics';
import { formatVector } from '../../conformance/project';
import { loadRunConfig } from '../../../src/core/data/check';
import { DataError } from '../../../src/core/data/errors';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

const load = (name: string) => JSON.parse(readFileSync(join(__dirname, '../../conformance', name), 'utf8'));

test('format vectors', async (t) => {
  for (const c of load('format.json').cases as {
    name: string;
    text: string;
    options?: FormatOptions;
    expect: Record<string, unknown>;
  }[]) {
    await t.test(c.name, () => {
      const r = checkFormat(c.text, c.options ?? {});
      assert.deepEqual(formatVector(r), c.expect);
    });
  }
});

test('reward vectors', async (t) => {
  for (const c of load('rewards.json').cases as {
    name: string;
    scheme: Scheme;
    params: RewardParams;
    records: TrajectoryRecord[];
    expect: Record<string, unknown>[];
  }[]) {
    await t.test(c.name, () => {
      const got = scoreRecords(c.records, c.scheme, c.params);
      assert.equal(got.length, c.expect.length);
      got.forEach((b, i) => {
        for (const [key, want] of Object.entries(c.expect[i])) {
          const have = (b as Record<string, unknown>)[key];
          if (typeof want === 'number' && typeof have === 'number')
            assert.ok(Math.abs(have - want) <= 1e-9, `${c.name} #${i} ${key}: ${have} ≠ ${want}`);
          else assert.deepEqual(have, want, `${c.name} #${i} ${key}`);
        }
      });
    });
  }
});

test('answer vectors', () => {
  const v = load('answers.json');
  for (const [input, want] of v.normalize)
    assert.equal(normalizeAnswer(input), want, `normalize ${JSON.stringify(input)}`);
  for (const [pred, gold, want] of v.em) assert.equal(exactMatch(pred, gold), want, `em ${pred}`);
  for (const [pred, gold, want] of v.cover_em) assert.equal(coverExactMatch(pred, gold), want, `cover-em ${pred}`);
  for (const [pred, gold, want] of v.f1) assert.ok(Math.abs(f1Score(pred, gold) - want) <= 1e-9, `f1 ${pred}`);
});

test('event vectors', () => {
  const v = load('events.json');
  for (const e of v.valid) {
    const r = parseEvent(JSON.stringify(e));
    assert.ok(r.ok, `should accept ${e.type}: ${r.ok ? '' : r.error}`);
  }
  for (const { event, why } of v.invalid)
    assert.equal(parseEvent(JSON.stringify(event)).ok, false, `should reject: ${why}`);
});

test('record vectors: the language server, the notebook and the reward give each record the same codes', async (t) => {
  for (const c of load('records.json').cases as {
    name: string;
    record: TrajectoryRecord;
    expect: { question: boolean; codes: string[] };
  }[]) {
    await t.test(c.name, () => {
      assert.equal(isQuestion(c.record), c.expect.question);
      const line = JSON.stringify(c.record);
      // The editor's file check (the language server's per-line analysis) reports exactly these codes.
      assert.deepEqual(
        analyzeLine(line, DEFAULT_SETTINGS).diagnostics.map((d) => d.code),
        c.expect.codes,
        'language server',
      );
      // The notebook, opened on the same line with the same settings, finds them in the record's step cells.
      const nb = textToNotebook(line, { params: rewardParams(DEFAULT_SETTINGS) });
      assert.deepEqual(
        notebookDiagnostics(nb.cells, formatOptions(DEFAULT_SETTINGS)).map((d) => d.code),
        c.expect.codes,
        'notebook',
      );
      // The reward's format gate: its violations are the errors among them (a question is graded as an empty response).
      if (!c.expect.question) {
        const [b] = scoreRecords([c.record], 'autocoa', rewardParams(DEFAULT_SETTINGS));
        const errors = [
          ...new Set(
            c.expect.codes.filter((code) => code in RULES && RULES[code as keyof typeof RULES].severity === 'error'),
          ),
        ];
        assert.deepEqual([b.violations, b.format_ok], [errors, errors.length === 0], 'reward');
      }
    });
  }
});

test('run-config file vectors: read as the trainer reads them', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-run-configs-'));
  try {
    type Case = {
      name: string;
      text?: string;
      base64?: string;
      expect: { ok: true } | { error: { line?: number; column?: number; field?: string } };
    };
    for (const [i, c] of (load('run-configs.json').cases as Case[]).entries()) {
      await t.test(c.name, () => {
        const file = join(dir, `${i}.run.json`);
        writeFileSync(file, c.text !== undefined ? Buffer.from(c.text) : Buffer.from(c.base64!, 'base64'));
        let got: DataError | null = null;
        try {
          loadRunConfig(file);
        } catch (e) {
          if (!(e instanceof DataError)) throw e;
          got = e;
        }
        if ('ok' in c.expect) return assert.equal(got?.message ?? null, null);
        assert.ok(got, 'expected an error');
        const want = c.expect.error;
        if (want.line !== undefined)
          assert.deepEqual([got.line, got.column, got.field], [want.line, want.column, 'config'], got.message);
        if (want.field !== undefined) assert.equal(got.field, want.field, got.message);
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
