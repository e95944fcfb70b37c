// The run-config JSON Schema that package.json contributes (jsonValidation) is what VS Code's JSON language
// service checks *.run.json files with: generated from src/core/config.ts, an example validates, a bad file gets
// an error at the offending property's path. Uses vscode-json-languageservice (the engine behind VS Code's JSON
// support), not a re-implementation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLanguageService, TextDocument, type Diagnostic } from 'vscode-json-languageservice';

const root = join(__dirname, '../../..');
const schemaUri = 'https://coa-studio.dev/schemas/run-config.schema.json';

/** The schema exactly as the build writes it (scripts/gen-schemas.ts), into a temp dir. */
function generatedSchema(): string {
  const dir = mkdtempSync(join(tmpdir(), 'coa-schema-'));
  try {
    execFileSync(process.execPath, ['--import', 'tsx', join(root, 'scripts/gen-schemas.ts'), dir], { stdio: 'ignore' });
    return readFileSync(join(dir, 'run-config.schema.json'), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const schemaText = generatedSchema();
const messageOf = (d: Diagnostic): string => (typeof d.message === 'string' ? d.message : d.message.value);

async function validate(text: string, uri = 'file:///ws/my.run.json'): Promise<Diagnostic[]> {
  // A file's own "$schema": "../schemas/run-config.schema.json" resolves to the same generated schema.
  const serve = (u: string) => u === schemaUri || u.endsWith('/schemas/run-config.schema.json');
  const ls = getLanguageService({
    schemaRequestService: async (u) => (serve(u) ? schemaText : Promise.reject(new Error(`no schema at ${u}`))),
  });
  ls.configure({ validate: true, allowComments: true, schemas: [{ uri: schemaUri, fileMatch: ['*.run.json'] }] });
  const doc = TextDocument.create(uri, 'json', 1, text);
  return ls.doValidation(doc, ls.parseJSONDocument(doc), { comments: 'ignore', trailingCommas: 'error' });
}

test('the schema in schemas/ (what package.json points at) is the one the build generates now', () => {
  assert.equal(
    readFileSync(join(root, 'schemas/run-config.schema.json'), 'utf8'),
    schemaText,
    'schemas/ is stale: npm run build',
  );
});

test('the example run configs validate', async () => {
  for (const file of ['examples/embedded-demo.run.json']) {
    const diags = await validate(readFileSync(join(root, file), 'utf8'), `file://${join(root, file)}`);
    assert.deepEqual(diags.map(messageOf), [], file);
  }
  const composed = {
    seed: 3,
    model: { path: '/models/qwen', embedded: { hidden_size: 32 } },
    stages: { sft2: { steps: 10, init_from: 'runs/a/stages/sft1/final' } },
    env: { cli: '/ext/dist/cli.js' },
  };
  assert.deepEqual((await validate(JSON.stringify(composed, null, 2))).map(messageOf), []);
});

test('the example configs validate anywhere: copied out of the repository, through the contributed schema alone', async () => {
  // Only the schema package.json contributes is served: a relative "$schema" (the examples had one) would not load
  // from the copy ("Unable to load schema"), which is what a user copying an example met.
  const contributed = (
    JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).contributes.jsonValidation as { fileMatch: string[] }[]
  ).flatMap((v) => v.fileMatch);
  assert.ok(contributed.includes('*.run.json'));
  for (const file of ['examples/embedded-demo.run.json', 'examples/collect-embedded.run.json']) {
    const text = readFileSync(join(root, file), 'utf8');
    assert.equal(JSON.parse(text).$schema, undefined, `${file}: a relative $schema breaks once the file is copied`);
    const ls = getLanguageService({
      schemaRequestService: async (u) =>
        u === schemaUri ? schemaText : Promise.reject(new Error(`Unable to load schema from ${u}`)),
    });
    ls.configure({ validate: true, allowComments: true, schemas: [{ uri: schemaUri, fileMatch: contributed }] });
    const doc = TextDocument.create('file:///home/user/elsewhere/my.run.json', 'json', 1, text);
    const diags = await ls.doValidation(doc, ls.parseJSONDocument(doc), {
      comments: 'ignore',
      trailingCommas: 'error',
    });
    assert.deepEqual(diags.map(messageOf), [], file);
  }
});

test('a bad run config: the error sits on the offending property (line/column) and names the problem', async () => {
  const text = '{\n  "seed": 1,\n  "stages": {\n    "sft2": { "steps": -5, "lr": 0.001 }\n  },\n  "modle": {}\n}\n';
  const diags = await validate(text);
  const steps = diags.find((d) => d.range.start.line === 3);
  assert.ok(steps, JSON.stringify(diags));
  assert.equal(text.split('\n')[3].slice(steps.range.start.character, steps.range.end.character), '-5');
  assert.match(messageOf(steps), /minimum|greater|exclusive/i);
  const unknown = diags.find((d) => d.range.start.line === 5);
  assert.ok(unknown, 'the misspelt key is reported');
  assert.match(messageOf(unknown), /not allowed/i);
});
