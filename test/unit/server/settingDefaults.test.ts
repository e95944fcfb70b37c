// Editor setting defaults have one table, package.json's contributes.configuration: the language server's fallbacks
// are read from it, and every setting there declares a default of its declared type.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseSettings } from '../../../src/server/settings';

const manifest = JSON.parse(readFileSync(join(__dirname, '../../../package.json'), 'utf8'));
const props: Record<string, { type: string; default: unknown }> = manifest.contributes.configuration.properties;

test('every contributed coaStudio setting declares a default of its type', () => {
  assert.ok(Object.keys(props).length >= 14);
  for (const [name, p] of Object.entries(props)) {
    assert.ok(name.startsWith('coaStudio.'), name);
    assert.ok('default' in p, `${name} has no default`);
    const type = Array.isArray(p.default) ? 'array' : typeof p.default;
    assert.equal(type, p.type, name);
  }
});

test("the language server's defaults are the manifest's", () => {
  const s = parseSettings({});
  const d = (k: string) => props[`coaStudio.${k}`].default;
  assert.deepEqual(s, {
    dialect: d('dialect'),
    rewardScheme: d('rewardScheme'),
    strictness: d('strictness'),
    tools: d('tools'),
    otc: { c: d('otc.c'), alpha: d('otc.alpha') },
    envServer: { url: d('envServer.url'), token: d('envServer.token') },
  });
});
