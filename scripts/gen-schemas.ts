// Writes the artefacts other languages read from the TypeScript single sources of truth:
//   schemas/run-config.schema.json  the run config (JSON Schema, draft 2020-12) for the editor and the trainer
//   schemas/dialects.json           the DIALECTS table + allTags(), so the trainer's tokenizer uses the same tags
//   schemas/prompts.json            the per-dialect agent instruction (src/core/prompts.ts)
//   schemas/events.schema.json      the trainer → editor event protocol (src/core/events.ts), one branch per type
//   schemas/record.schema.json      the trajectory record (src/core/record.ts)
//   schemas/codes.json              format rule codes (src/core/codes.ts), with the tool-call codes marked
//   schemas/search.json             the search tool's stop words (src/env/tokenize.ts): benchmark names avoid them
//   schemas/stages.json             the stage table, the whole-pipeline entry and the results table's settings
// dialects.json also carries `tokenizer_words`: the words observation layouts and answer syntax write themselves
// (src/env/observations.ts layoutWords), which the embedded tokenizer's vocabulary includes.
//   schemas/names.json              the naming rule of run ids, stages and labels (src/core/names.ts)
// Usage: node dist/gen-schemas.js [outDir]   (default: ./schemas, relative to the working directory)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { RunConfigSchema } from '../src/core/config';
import { BOXED_OPEN, DIALECTS, DIALECT_NAMES, DEFAULT_TOOLS, allTags } from '../src/core/dialects';
import { DIALECT_PROMPTS } from '../src/core/prompts';
import { EventSchema, PROTOCOL_VERSION } from '../src/core/events';
import { RecordSchema } from '../src/core/record';
import { RECORD_RULES, RULES } from '../src/core/codes';
import { layoutWords } from '../src/env/observations';
import { STOPWORDS } from '../src/env/tokenize';
import { PIPELINE_INFO, RESULT_SETTINGS, STAGE_TABLE } from '../src/core/stages';
import { NAME_RULE } from '../src/core/names';

const outDir = resolve(process.argv[2] ?? 'schemas');
mkdirSync(outDir, { recursive: true });

// io: 'input' — a config file may leave out anything that has a default.
const runConfig = {
  ...z.toJSONSchema(RunConfigSchema, { io: 'input', target: 'draft-2020-12' }),
  $id: 'https://coa-studio.dev/schemas/run-config.schema.json',
  title: 'CoA Studio run config',
};
const tokenizerWords = [...new Set([...layoutWords(DIALECT_NAMES), ...(BOXED_OPEN.match(/[a-z]+/g) ?? [])])].sort();
const dialects = { dialects: DIALECTS, names: DIALECT_NAMES, default_tools: DEFAULT_TOOLS, all_tags: allTags(), tokenizer_words: tokenizerWords };
// io: 'input' — what a reader accepts (zod keeps unknown keys out of the parsed value but does not reject them).
const draft = { io: 'input', target: 'draft-2020-12' } as const;
const events = {
  ...z.toJSONSchema(EventSchema, draft),
  $id: 'https://coa-studio.dev/schemas/events.schema.json',
  title: `CoA Studio trainer event (protocol v${PROTOCOL_VERSION})`,
};
const record = { ...z.toJSONSchema(RecordSchema, draft), $id: 'https://coa-studio.dev/schemas/record.schema.json', title: 'CoA trajectory record' };
const codes = { rules: RULES, record_rules: RECORD_RULES, tool_call_codes: Object.values(RULES).filter((r) => r.toolCall).map((r) => r.code) };

const files: [string, unknown][] = [
  ['run-config.schema.json', runConfig],
  ['dialects.json', dialects],
  ['prompts.json', DIALECT_PROMPTS],
  ['events.schema.json', events],
  ['record.schema.json', record],
  ['codes.json', codes],
  ['search.json', { stopwords: [...STOPWORDS].sort() }],
  ['stages.json', { stages: STAGE_TABLE, pipeline: PIPELINE_INFO, results: RESULT_SETTINGS }],
  ['names.json', NAME_RULE],
];
for (const [name, value] of files) {
  writeFileSync(join(outDir, name), `${JSON.stringify(value, null, 2)}\n`);
  console.log(`gen-schemas: wrote ${join(outDir, name)}`);
}
