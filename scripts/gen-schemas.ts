// Writes the artefacts other languages read from the TypeScript single sources of truth:
//   schemas/run-config.schema.json  the run config (JSON Schema, draft 2020-12) for the editor and the trainer
//   schemas/dialects.json           the DIALECTS table + allTags(), so the trainer's tokenizer uses the same tags
//   schemas/prompts.json            the per-dialect agent instruction (src/core/prompts.ts)
//   schemas/names.json              the naming rule of run ids, stages and labels (src/core/names.ts)
// Usage: node dist/gen-schemas.js [outDir]   (default: ./schemas, relative to the working directory)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { RunConfigSchema } from '../src/core/config';
import { DIALECTS, DIALECT_NAMES, DEFAULT_TOOLS, allTags } from '../src/core/dialects';
import { DIALECT_PROMPTS } from '../src/core/prompts';
import { NAME_RULE } from '../src/core/names';

const outDir = resolve(process.argv[2] ?? 'schemas');
mkdirSync(outDir, { recursive: true });

// io: 'input' — a config file may leave out anything that has a default.
const runConfig = {
  ...z.toJSONSchema(RunConfigSchema, { io: 'input', target: 'draft-2020-12' }),
  $id: 'https://coa-studio.dev/schemas/run-config.schema.json',
  title: 'CoA Studio run config',
};
const dialects = { dialects: DIALECTS, names: DIALECT_NAMES, default_tools: DEFAULT_TOOLS, all_tags: allTags() };

const files: [string, unknown][] = [
  ['run-config.schema.json', runConfig],
  ['dialects.json', dialects],
  ['prompts.json', DIALECT_PROMPTS],
  ['names.json', NAME_RULE],
];
for (const [name, value] of files) {
  writeFileSync(join(outDir, name), `${JSON.stringify(value, null, 2)}\n`);
  console.log(`gen-schemas: wrote ${join(outDir, name)}`);
}
