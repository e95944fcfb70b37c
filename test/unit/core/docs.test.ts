// docs/format-rules.md documents every code of the rule tables with its title and severity.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RULES, RECORD_RULES } from '../../../src/core/codes';

const doc = readFileSync(join(__dirname, '../../../docs/format-rules.md'), 'utf8');

test('every format rule is documented with its title and severity', () => {
  for (const r of Object.values(RULES)) {
    const row = doc.split('\n').find((l) => l.startsWith(`| ${r.code} |`));
    assert.ok(row, `${r.code} missing from docs/format-rules.md`);
    assert.ok(row.includes(`| ${r.title.replace('<think>', '`<think>`')} |`), `${r.code} title differs`);
    assert.ok(row.includes(`| ${r.severity} |`), `${r.code} severity differs`);
  }
  for (const r of Object.values(RECORD_RULES)) assert.ok(doc.includes(`| ${r.code} | ${r.title}`), `${r.code} missing`);
});
