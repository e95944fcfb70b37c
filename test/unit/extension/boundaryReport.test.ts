// The Search Boundary panel's host side: the report file the trainer's meter writes (the demo run's, recorded in
// test/fixtures/demo-run/eval) read and checked against the core's schema, a broken one named by file and field,
// and the page state kept small; the live panel puts the meter's metrics beside TC.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { demoRunFile } from '../../fixtures/demoRun';
import {
  MAX_RESPONSE_CHARS,
  MAX_ROWS,
  isReportName,
  pageState,
  parseReport,
} from '../../../src/extension/providers/boundary/report';
import { groupOf } from '../../../webview/live-panel/model';
import { BOUNDARY_METRIC_NAMES } from '../../../src/core/metrics';

const FILE = 'runs/demo/eval/boundary-rl2-otc-test.json';
const text = demoRunFile('eval/boundary-rl2-otc-test.json').toString('utf8');

test("the demo run's report reads as the schema says, classes counting every question", () => {
  const r = parseReport(text, FILE);
  assert.equal(r.stage, 'rl2-otc');
  assert.equal(r.rows.length, r.summary.questions);
  assert.equal(
    Object.values(r.summary.classes).reduce((a, b) => a + b, 0),
    r.summary.questions,
  );
  for (const c of Object.keys(r.summary.classes))
    assert.equal(r.rows.filter((x) => x.class === c).length, r.summary.classes[c as keyof typeof r.summary.classes], c);
  assert.ok(r.truth && r.truth.class_agreement !== null);
});

test('a broken report is named by file and field, never a stack trace', () => {
  assert.throws(() => parseReport('{"version": 1,', FILE), /runs\/demo\/eval\/boundary-rl2-otc-test.json: not JSON/);
  const r = JSON.parse(text) as { summary: Record<string, unknown> };
  delete r.summary.tc;
  assert.throws(() => parseReport(JSON.stringify(r), FILE), /boundary-rl2-otc-test\.json: summary\.tc: /);
  const v = JSON.parse(text) as { version: number };
  v.version = 2;
  assert.throws(() => parseReport(JSON.stringify(v), FILE), /version: .*not a search boundary report of this version/);
});

test('the page gets at most MAX_ROWS questions and cut responses, and says how many were left out', () => {
  const r = parseReport(text, FILE);
  const many = {
    ...r,
    rows: Array.from({ length: MAX_ROWS + 7 }, (_, i) => ({ ...r.rows[i % r.rows.length], id: `q${i}` })),
  };
  many.rows[0] = {
    ...many.rows[0],
    responses: { ...many.rows[0].responses, search: 'x'.repeat(MAX_RESPONSE_CHARS + 10) },
  };
  const s = pageState(many, FILE);
  assert.equal(s.report.rows.length, MAX_ROWS);
  assert.equal(s.cutRows, 7);
  assert.match(s.report.rows[0].responses.search, /… \(10 more characters\)$/);
  assert.equal(s.report.rows[1].responses.search, many.rows[1].responses.search);
});

test("report files are known by name; the meter's metrics chart beside TC", () => {
  assert.ok(isReportName('boundary-rl2-test.json'));
  assert.ok(!isReportName('rl2-agent-test.jsonl'));
  const groups = Object.fromEntries(BOUNDARY_METRIC_NAMES.map((m) => [m, groupOf(m)]));
  assert.deepEqual(groups, {
    boundary_over_search: 'agent',
    boundary_under_search: 'agent',
    boundary_em_closed_book: 'quality',
    boundary_tc: 'agent',
    boundary_min_tc: 'agent',
    boundary_tc_over_min: 'agent',
    boundary_s: 'throughput',
  });
  assert.equal(groupOf('tc'), 'agent');
});
