// package.json (the extension manifest) agrees with the code: command table, settings, grammar files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '../../..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

test('every contributed command is in the command table and has an enablement key', () => {
  const src = readFileSync(join(root, 'src/extension/commands.ts'), 'utf8');
  const table = [...src.matchAll(/^ {2}'(coaStudio\.[A-Za-z.]+)':/gm)].map((m) => m[1]).sort();
  const contributed = pkg.contributes.commands.map((c: { command: string }) => c.command).sort();
  assert.deepEqual(contributed, table);
  for (const c of pkg.contributes.commands) assert.ok(c.enablement, `${c.command} has no enablement`);
});

test('settings read by config.ts are all contributed', () => {
  const src = readFileSync(join(root, 'src/extension/config.ts'), 'utf8');
  const read = [...src.matchAll(/c\.get\('([^']+)'/g)].map((m) => `coaStudio.${m[1]}`).sort();
  assert.deepEqual(read, Object.keys(pkg.contributes.configuration.properties).sort());
});

test('manifest basics and grammar files exist', () => {
  assert.equal(pkg.name, 'coa-studio');
  assert.equal(pkg.displayName, 'CoA Studio');
  assert.ok(pkg.engines.vscode);
  assert.equal(pkg.main, './dist/extension.js');
  assert.ok(pkg.bin.coa);
  for (const g of pkg.contributes.grammars) assert.ok(existsSync(join(root, g.path)), g.path);
  for (const l of pkg.contributes.languages) assert.ok(existsSync(join(root, l.configuration)), l.configuration);
});
