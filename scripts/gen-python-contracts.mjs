// The Python side of the contracts src/core owns: typed classes generated from the JSON schemas gen-schemas writes
// (schemas/python/*.schema.json) by datamodel-code-generator (a maintained generator, pinned in
// src/trainer/requirements.txt), into src/trainer/coa_trainer/contracts/. The files are committed, so a checkout
// without the trainer's .venv still has them; `npm run build` regenerates them when .venv has the generator, and
// src/trainer/tests/test_contracts.py fails when they are stale.
//   node scripts/gen-python-contracts.mjs [schemasDir] [outDir] [--check]
// --check writes nothing: exit 1 naming every generated file that differs from what it would write.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2).filter((a) => a !== '--check');
const check = process.argv.includes('--check');
const schemasDir = resolve(args[0] ?? join(root, 'schemas'));
const outDir = resolve(args[1] ?? join(root, 'src/trainer/coa_trainer/contracts'));
const generator = join(
  root,
  process.platform === 'win32' ? '.venv/Scripts/datamodel-codegen.exe' : '.venv/bin/datamodel-codegen',
);
const ruff = join(root, process.platform === 'win32' ? '.venv/Scripts/ruff.exe' : '.venv/bin/ruff');

/** The module as the repository formats Python (ruff.toml's [format]), so the generated files pass the lint suite's
 * `ruff format --check` whatever layout the generator prints. */
function formatted(text, target) {
  const argv = ['format', '--config', join(root, 'ruff.toml'), '--stdin-filename', target, '-'];
  const r = spawnSync(ruff, argv, { cwd: root, input: text, encoding: 'utf8' });
  if (r.error || r.status !== 0)
    throw new Error(`ruff format failed on the generated ${target}: ${r.error?.message ?? r.stderr}`);
  return r.stdout;
}

/** Generated module ← schema, and where the schema comes from (for the header). */
const MODULES = [
  { module: 'run_config.py', schema: 'python/run-config.schema.json', source: 'src/core/config.ts (RunConfigSchema)' },
  // an Enum the code raises with (ErrorCode.bad_data), a str subclass so it writes into events as its value
  { module: 'stage_info.py', schema: 'python/stage-info.schema.json', source: 'src/core/stages.ts (StageInfoSchema)' },
  // one entry of the line index beside a rollouts file (base/line_index.py reads and writes them)
  {
    module: 'line_index.py',
    schema: 'python/line-index-entry.schema.json',
    source: 'src/core/lineIndex.ts (LineIndexEntrySchema)',
  },
  // The trajectory record and its parts (tokens, grade breakdown, meta): the classes every other module that carries a
  // record imports from here (SHARED_FROM below).
  { module: 'record.py', schema: 'python/record.schema.json', source: 'src/core/record.ts (RecordSchema)' },
  // one class per event type, the writer's fields (v, time, run) and the type defaulted (--use-default)
  {
    module: 'events.py',
    schema: 'python/events.schema.json',
    source: 'src/core/events.ts (EventSchema)',
    options: ['--use-default'],
  },
  {
    module: 'boundary_report.py',
    schema: 'python/boundary-report.schema.json',
    source: 'src/core/boundary.ts (BoundaryReportSchema)',
  },
  // the dialect table, the dialects' prompts, the search tool's stop words, the rule codes, the reward schemes and the
  // results settings (contracts/schemas.py reads them as these)
  {
    module: 'tables.py',
    schema: 'python/tables.schema.json',
    source: "src/core's dialect, prompt, code, reward and stage tables, src/env/tokenize.ts (scripts/gen-schemas.ts)",
  },
  {
    module: 'env_protocol.py',
    schema: 'python/env-protocol.schema.json',
    source: 'src/env/protocol.ts (ENV_PROTOCOL_PARTS)',
  },
  {
    module: 'agent_metric.py',
    schema: 'python/agent-metric.schema.json',
    source: 'src/core/metrics.ts (AGENT_METRICS)',
    options: ['--enum-field-as-literal', 'none', '--use-subclass-enum'],
  },
  {
    module: 'boundary_class.py',
    schema: 'python/boundary-class.schema.json',
    source: 'src/core/boundaryClasses.ts (BOUNDARY_CLASSES)',
    options: ['--enum-field-as-literal', 'none', '--use-subclass-enum'],
  },
  {
    module: 'boundary_metric.py',
    schema: 'python/boundary-metric.schema.json',
    source: 'src/core/metrics.ts (BOUNDARY_METRICS)',
    options: ['--enum-field-as-literal', 'none', '--use-subclass-enum'],
  },
  {
    module: 'error_code.py',
    schema: 'python/error-code.schema.json',
    source: 'src/core/events.ts (TRAINER_ERRORS)',
    options: ['--enum-field-as-literal', 'none', '--use-subclass-enum'],
  },
];
// Fixed options: the output must not depend on the machine (no timestamp, the built-in formatter only).
const OPTIONS = [
  '--input-file-type',
  'jsonschema',
  '--output-model-type',
  'pydantic_v2.BaseModel',
  '--target-python-version',
  '3.10',
  '--disable-timestamp',
  '--formatters',
  'builtin',
  '--use-standard-collections',
  '--use-union-operator',
  '--field-constraints',
  '--use-double-quotes',
  '--use-field-description',
  '--enum-field-as-literal',
  'all',
  '--collapse-root-models',
  '--use-title-as-name',
  '--reuse-model',
  '--collapse-reuse-models',
];

// A class generated again in another module (the record inside the sample event and the env protocol's grade and scan
// requests) is imported from the module that owns it instead, so a record read from any of them is one type. The
// copies must be the same text: a class that differs stops the build (its schemas have drifted apart).
const SHARED_FROM = 'record.py';

/** The module's top-level classes, by name → their text (each starts at `class Name(` and runs to the next one). */
function classBlocks(text) {
  const blocks = new Map();
  for (const block of text.split(/\n\n\n(?=class )/).slice(1))
    blocks.set(/^class (\w+)\(/.exec(block)[1], block.trimEnd());
  return blocks;
}

/** `text` with the classes `owner` defines dropped and imported from it (`.record`). */
function importShared(text, module, owner) {
  const own = classBlocks(owner);
  const parts = text.split(/\n\n\n(?=class )/);
  const kept = [parts[0]];
  const imported = [];
  for (const block of parts.slice(1)) {
    const name = /^class (\w+)\(/.exec(block)[1];
    if (!own.has(name)) kept.push(block);
    else if (own.get(name) === block.trimEnd()) imported.push(name);
    else throw new Error(`${module}: class ${name} differs from ${SHARED_FROM}'s (their schemas have drifted apart)`);
  }
  if (!imported.length) return text;
  // import what the classes left still name, from the owner and from typing and pydantic alike
  const rest = kept.slice(1).join('\n\n\n');
  const used = (names) => names.filter((n) => new RegExp(`\\b${n}\\b`).test(rest));
  const head = kept[0]
    .replace(
      /\nfrom (typing|pydantic) import ([^\n]+)/g,
      (_m, from, names) => `\nfrom ${from} import ${used(names.split(', ')).join(', ')}`,
    )
    .replace(/\nfrom (typing|pydantic) import \n/g, '\n')
    .replace(
      /(\nfrom pydantic import [^\n]+)/,
      `$1\n\nfrom .${SHARED_FROM.replace(/\.py$/, '')} import ${used(imported).join(', ')}`,
    );
  return [head, ...kept.slice(1)].join('\n\n\n');
}

if (!existsSync(generator)) {
  console.log(
    `gen-python-contracts: ${generator} not found (no trainer .venv): the committed contracts stay as they are`,
  );
  process.exit(0);
}
const work = mkdtempSync(join(tmpdir(), 'coa-contracts-'));
const stale = [];
let shared = ''; // the generated text of SHARED_FROM (listed before the modules that import from it)
try {
  for (const { module, schema, source, options = [] } of MODULES) {
    const input = join(schemasDir, schema);
    if (!existsSync(input)) throw new Error(`${input} missing: run gen-schemas first (npm run build)`);
    const out = join(work, module);
    const r = spawnSync(generator, ['--input', input, '--output', out, ...OPTIONS, ...options], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`datamodel-codegen failed on ${input}:\n${r.stderr}`);
    let body = readFileSync(out, 'utf8').replace(/^# generated by datamodel-codegen:\n#\s+filename:.*\n/, '');
    if (module === SHARED_FROM) shared = body;
    else if (shared) body = importShared(body, module, shared);
    const target = join(outDir, module);
    const text = formatted(
      `# Generated from ${source} by scripts/gen-python-contracts.mjs (datamodel-code-generator): do not edit.\n${body}`,
      target,
    );
    if (check) {
      if (!existsSync(target) || readFileSync(target, 'utf8') !== text) stale.push(target);
    } else {
      writeFileSync(target, text);
      console.log(`gen-python-contracts: wrote ${target}`);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
if (stale.length) {
  console.error(`gen-python-contracts: stale (run npm run build): ${stale.join(', ')}`);
  process.exit(1);
}
