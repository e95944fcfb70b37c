// Writes the artefacts other languages read from the TypeScript single sources of truth:
//   schemas/run-config.schema.json  the run config (JSON Schema, draft 2020-12) for the editor and the trainer
//   schemas/dialects.json           the DIALECTS table + allTags(), so the trainer's tokenizer uses the same tags
//   schemas/prompts.json            the per-dialect agent instruction (src/core/prompts.ts)
//   schemas/events.schema.json      the trainer → editor event protocol (src/core/events.ts), one branch per type
//   schemas/record.schema.json      the trajectory record (src/core/record.ts)
//   schemas/codes.json              format rule codes (src/core/codes.ts), with the tool-call codes marked
//   schemas/search.json             the search tool's stop words (src/env/tokenize.ts): benchmark names avoid them
//   schemas/stages.json             the stage table, the whole-pipeline entry and the results table's settings
// dialects.json also carries `question_markers` (where a dataset prompt's question starts, src/core/importers/verl-parquet.ts)
// and `tokenizer_words`: the words observation layouts and answer syntax write themselves
// (src/env/observations.ts layoutWords), which the embedded tokenizer's vocabulary includes.
//   schemas/names.json              the naming rule of run ids, stages and labels (src/core/names.ts)
//   schemas/errors.json             the trainer's error codes and exit statuses (src/core/events.ts TRAINER_ERRORS)
//   schemas/metrics.json            the agent metrics' names and meanings (src/core/metrics.ts)
//   schemas/histograms.json         the bin edges of the step histograms (src/core/metrics.ts HISTOGRAMS)
//   schemas/system-metrics.json     the system metrics' names and meanings (src/core/metrics.ts SYSTEM_METRICS)
//   schemas/rewards.json            the reward schemes, and those that need a question's whole group (src/core/rewards.ts)
//   schemas/config-paths.json       the run config's path fields, resolved against the config file (src/core/data/paths.ts)
//   schemas/boundary-report.schema.json  the search boundary meter's report file (src/core/boundary.ts)
//   schemas/line-index.json         the line index beside a rollouts file: its name and entry (src/core/lineIndex.ts)
//   schemas/python/*.schema.json    the same contracts shaped for the generated Python classes (gen-python-contracts.mjs)
// Usage: node dist/gen-schemas.js [outDir]   (default: ./schemas, relative to the working directory)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { CONFIG_MAX_NESTING, RunConfigSchema } from '../src/core/config';
import { SETTING_LIMIT } from '../src/core/configZod';
import { BOXED_OPEN, DIALECTS, DIALECT_NAMES, DEFAULT_TOOLS, Dialect, allTags } from '../src/core/dialects';
import { DIALECT_PROMPTS, DialectPrompt } from '../src/core/prompts';
import { EventSchema, PROTOCOL_VERSION, TRAINER_ERRORS, TRAINER_ERROR_CODES } from '../src/core/events';
import { RecordSchema } from '../src/core/record';
import { RECORD_RULES, RULES, RuleInfo } from '../src/core/codes';
import { layoutWords } from '../src/env/observations';
import { STOPWORDS } from '../src/env/tokenize';
import { ENV_PROTOCOL_PARTS } from '../src/env/protocol';
import { PIPELINE_INFO, RESULT_SETTINGS, ResultSetting, STAGE_TABLE, StageInfoSchema } from '../src/core/stages';
import { NAME_RULE } from '../src/core/names';
import {
  AGENT_METRICS,
  AGENT_METRIC_NAMES,
  BOUNDARY_METRIC_NAMES,
  HISTOGRAMS,
  SYSTEM_METRICS,
} from '../src/core/metrics';
import { SCHEMES } from '../src/core/record';
import { QUESTION_MARKERS } from '../src/core/importers/verl-parquet';
import { GROUP_SCHEMES } from '../src/core/rewards';
import { CONFIG_COMMAND_FIELDS, CONFIG_LEGACY_DEFAULTS, CONFIG_PATH_FIELDS } from '../src/core/data/paths';
import { BOUNDARY_CLASS_NAMES, BoundaryReportSchema } from '../src/core/boundary';
import { LINE_INDEX_REPLACES, LINE_INDEX_SUFFIX, LineIndexEntrySchema } from '../src/core/lineIndex';

const outDir = resolve(process.argv[2] ?? 'schemas');
mkdirSync(outDir, { recursive: true });

// io: 'input' — a config file may leave out anything that has a default. `x-coa-max-nesting`: how deep a config's
// JSON may nest (src/core/config.ts CONFIG_MAX_NESTING; the trainer reads it from here).
const runConfig = boundedNumbers({
  ...z.toJSONSchema(RunConfigSchema, { io: 'input', target: 'draft-2020-12' }),
  $id: 'https://coa-studio.dev/schemas/run-config.schema.json',
  title: 'CoA Studio run config',
  'x-coa-max-nesting': CONFIG_MAX_NESTING,
});

/**
 * The run config's number rule (src/core/configZod.ts): every number node has a finite minimum and maximum, which is
 * what makes the trainer's JSON Schema validation refuse Python's infinities and 1e300s. A number made other than by
 * configZod (another module's zod, z.float64()) would slip past it: the build stops and names the field.
 */
function boundedNumbers<T extends Record<string, unknown>>(schema: T): T {
  const unbounded: string[] = [];
  const visit = (node: unknown, path: string): void => {
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach((n) => visit(n, path));
    const n = node as Record<string, unknown>;
    if ((n.type === 'number' || n.type === 'integer') && n.const === undefined && n.enum === undefined) {
      const finite = (k: string) => typeof n[k] === 'number' && Math.abs(n[k] as number) <= SETTING_LIMIT;
      if (!(finite('minimum') || finite('exclusiveMinimum')) || !(finite('maximum') || finite('exclusiveMaximum')))
        unbounded.push(path || '(root)');
    }
    for (const [key, sub] of Object.entries(n))
      visit(
        sub,
        key === 'properties' || key === 'anyOf' || key === 'additionalProperties' || key === 'items'
          ? path
          : `${path}/${key}`,
      );
  };
  visit(schema, '');
  if (unbounded.length)
    throw new Error(
      `gen-schemas: run-config numbers without a finite range (make them with src/core/configZod's z.number()): ${unbounded.join(', ')}`,
    );
  return schema;
}
const tokenizerWords = [...new Set([...layoutWords(DIALECT_NAMES), ...(BOXED_OPEN.match(/[a-z]+/g) ?? [])])].sort();
const dialects = {
  dialects: DIALECTS,
  names: DIALECT_NAMES,
  default_tools: DEFAULT_TOOLS,
  all_tags: allTags(),
  tokenizer_words: tokenizerWords,
  question_markers: QUESTION_MARKERS,
};
// The tables above as zod schemas, for the trainer's generated classes (contracts/tables.py: DialectTable, Dialect,
// DialectPrompt, SearchTable; below them the rule codes, reward schemes and results settings: CodesTable,
// RewardsTable, ResultSetting). Each schema is typed as the core's own type (a field added there and not here fails
// the type check) and parses the table it describes before it is written (a value the schema does not describe stops
// the build), so the classes cannot drift from the files the trainer validates with them.
const TagPairSchema = z.object({ open: z.string(), close: z.string() }).meta({ title: 'TagPair' });
const DialectSchema: z.ZodType<Dialect> = z
  .object({
    name: z.enum(DIALECT_NAMES),
    description: z.string(),
    think: TagPairSchema,
    action: z.discriminatedUnion('style', [
      z.object({ style: z.literal('per-tool') }).meta({ title: 'PerToolAction' }),
      z.object({ style: z.literal('fixed'), tool: z.string(), tags: TagPairSchema }).meta({ title: 'FixedAction' }),
      z.object({ style: z.literal('json'), tags: TagPairSchema }).meta({ title: 'JsonAction' }),
    ]),
    observation: TagPairSchema,
    answer: z.discriminatedUnion('style', [
      z.object({ style: z.literal('tag'), tags: TagPairSchema }).meta({ title: 'TagAnswer' }),
      z.object({ style: z.literal('boxed') }).meta({ title: 'BoxedAnswer' }),
    ]),
    actionsInsideThink: z.boolean(),
    implicitThinkOpen: z.boolean(),
  })
  .meta({ title: 'Dialect' });
const DialectTableSchema = z
  .object({
    dialects: z.record(z.string(), DialectSchema),
    names: z.array(z.enum(DIALECT_NAMES)),
    default_tools: z.array(z.string()),
    all_tags: z.array(z.string()),
    tokenizer_words: z.array(z.string()),
    question_markers: z.array(z.string()),
  })
  .meta({ title: 'DialectTable' });
const DialectPromptSchema: z.ZodType<DialectPrompt> = z
  .object({ system: z.string().nullable(), user: z.string(), cot: z.string() })
  .meta({ title: 'DialectPrompt' });
const SearchTableSchema = z.object({ stopwords: z.array(z.string()) }).meta({ title: 'SearchTable' });
const searchTable = { stopwords: [...STOPWORDS].sort() };
DialectTableSchema.parse(dialects);
z.record(z.enum(DIALECT_NAMES), DialectPromptSchema).parse(DIALECT_PROMPTS);
SearchTableSchema.parse(searchTable);
const codes = {
  rules: RULES,
  record_rules: RECORD_RULES,
  tool_call_codes: Object.values(RULES)
    .filter((r) => r.toolCall)
    .map((r) => r.code),
};
const rewards = { schemes: SCHEMES, group_schemes: GROUP_SCHEMES };
const severity = z.enum(['error', 'warning']);
const RuleInfoSchema: z.ZodType<RuleInfo> = z
  .object({
    code: z.string(),
    title: z.string(),
    severity,
    strictOnly: z.boolean(),
    completeOnly: z.boolean(),
    toolCall: z.boolean(),
  })
  .meta({ title: 'RuleInfo' });
const CodesTableSchema = z
  .object({
    rules: z.record(z.string(), RuleInfoSchema),
    record_rules: z.record(
      z.string(),
      z.object({ code: z.string(), title: z.string(), severity }).meta({ title: 'RecordRule' }),
    ),
    tool_call_codes: z.array(z.string()),
  })
  .meta({ title: 'CodesTable' });
const RewardsTableSchema = z
  .object({ schemes: z.array(z.enum(SCHEMES)), group_schemes: z.array(z.enum(SCHEMES)) })
  .meta({ title: 'RewardsTable' });
const ResultSettingSchema: z.ZodType<ResultSetting> = z
  .object({
    id: z.string(),
    label: z.string(),
    stage: z.string(),
    mode: z.enum(['no-tool', 'workflow', 'agent']),
    description: z.string(),
  })
  .meta({ title: 'ResultSetting' });
CodesTableSchema.parse(codes);
RewardsTableSchema.parse(rewards);
z.array(ResultSettingSchema).parse(RESULT_SETTINGS);
const tablesPython = {
  title: 'Tables',
  description:
    'The core tables the trainer reads typed: dialects.json, prompts.json (per dialect), search.json, codes.json, ' +
    "rewards.json, stages.json's results.",
  $defs: Object.fromEntries(
    [
      DialectTableSchema,
      DialectPromptSchema,
      SearchTableSchema,
      CodesTableSchema,
      RewardsTableSchema,
      ResultSettingSchema,
    ].map((schema) => {
      const { $schema: _s, ...body } = z.toJSONSchema(schema, { io: 'output', target: 'draft-2020-12' }) as Json;
      return [body.title as string, body];
    }),
  ),
};

// io: 'input' — what a reader accepts (zod keeps unknown keys out of the parsed value but does not reject them).
const draft = { io: 'input', target: 'draft-2020-12' } as const;
const events = {
  ...z.toJSONSchema(EventSchema, draft),
  $id: 'https://coa-studio.dev/schemas/events.schema.json',
  title: `CoA Studio trainer event (protocol v${PROTOCOL_VERSION})`,
};
const record = {
  ...z.toJSONSchema(RecordSchema, draft),
  $id: 'https://coa-studio.dev/schemas/record.schema.json',
  title: 'CoA trajectory record',
};

// The run config for generated Python classes (scripts/gen-python-contracts.mjs → coa_trainer/contracts/run_config.py):
// the *output* shape (after defaults: every field present, nullable only where null is a value), each object named,
// and `anyOf [T, null]` of a scalar written as `type: [T, "null"]` so the generator types it `T | None` rather than
// wrapping it in a class of its own.
const PYTHON_CLASS_NAMES: Record<string, string> = {
  '': 'RunConfig',
  model: 'ModelConfig',
  'model.lora': 'LoraConfig',
  'model.embedded': 'EmbeddedModelConfig',
  distributed: 'DistributedConfig',
  benchmark: 'BenchmarkConfig',
  collect: 'CollectConfig',
  'collect.teacher': 'TeacherConfig',
  'collect.reward': 'CollectReward',
  'collect.select': 'CollectSelect',
  data: 'DataConfig',
  'data.questions': 'QuestionFiles',
  'data.sft[]': 'SftFile',
  'data.sft_filter': 'SftFilter',
  stages: 'StagesConfig',
  'stages.pretrain': 'PretrainStage',
  'stages.sft1': 'Sft1Stage',
  'stages.sft2': 'SftMixStage',
  'stages.sft3': 'SftMixStage',
  'stages.rl1': 'RlStage',
  'stages.rl2': 'RlStage',
  'stages.rl1.reward': 'RlReward',
  'stages.rl2.reward': 'RlReward',
  'stages.rl1.alerts': 'AlertThresholds',
  'stages.rl2.alerts': 'AlertThresholds',
  eval: 'EvalConfig',
  env: 'EnvConfig',
  logging: 'LoggingConfig',
  'logging.wandb': 'WandbLogging',
  'logging.tensorboard': 'TensorboardLogging',
};

type Json = Record<string, unknown>;
const CHECKED_ELSEWHERE = [
  'default',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
];
function forPython(schema: Json, names: Record<string, string>, what = 'run-config'): Json {
  const copy = JSON.parse(JSON.stringify(schema)) as Json;
  const unnamed: string[] = [];
  const visit = (node: Json, path: string): void => {
    // Values are checked against the input schema (defaults filled) before a class is made: the classes carry types,
    // not a second copy of the bounds and defaults (which would also make RL-1 and RL-2 two classes).
    for (const key of CHECKED_ELSEWHERE) delete node[key];
    const any = node.anyOf as Json[] | undefined;
    if (any && any.length === 2 && any.some((b) => b.type === 'null')) {
      const other = any.find((b) => b.type !== 'null')!;
      if (typeof other.type === 'string' && other.type !== 'object' && other.type !== 'array') {
        delete node.anyOf;
        Object.assign(node, other, { type: [other.type, 'null'] });
        for (const key of CHECKED_ELSEWHERE) delete node[key];
      }
    }
    for (const branch of (node.anyOf as Json[] | undefined) ?? []) visit(branch, path);
    if (node.additionalProperties && typeof node.additionalProperties === 'object')
      visit(node.additionalProperties as Json, `${path}{}`);
    if (node.type === 'object' && node.properties) {
      if (names[path]) node.title = names[path];
      else if (typeof node.title !== 'string') unnamed.push(path || '(root)');
      for (const [key, sub] of Object.entries(node.properties as Record<string, Json>))
        visit(sub, path ? `${path}.${key}` : key);
    }
    if (node.items && typeof node.items === 'object') visit(node.items as Json, `${path}[]`);
  };
  visit(copy, '');
  if (unnamed.length)
    throw new Error(
      `gen-schemas: name these ${what} objects for Python (a names table here, or a zod .meta({ title })): ${unnamed.join(', ')}`,
    );
  delete copy.$id;
  delete copy.$schema;
  return copy;
}
// The environment server's HTTP contract for the trainer's client (coa_trainer/contracts/env_protocol.py): requests in
// the shape a caller may send (defaults optional), answers in the shape the server writes.
const envProtocol = {
  title: 'EnvProtocol',
  description: "The environment server's HTTP contract (src/env/protocol.ts).",
  $defs: Object.fromEntries(
    Object.entries(ENV_PROTOCOL_PARTS).map(([name, part]) => {
      const io = name.endsWith('Request') ? 'input' : 'output';
      const { $schema: _s, ...body } = z.toJSONSchema(part(), { io, target: 'draft-2020-12' }) as Json;
      return [name, stripChecks({ ...body, title: name })];
    }),
  ),
};
function stripChecks(node: Json): Json {
  const copy = JSON.parse(JSON.stringify(node)) as Json;
  const visit = (n: unknown): void => {
    if (!n || typeof n !== 'object') return;
    if (Array.isArray(n)) return n.forEach(visit);
    for (const key of CHECKED_ELSEWHERE) delete (n as Json)[key];
    Object.values(n as Json).forEach(visit);
  };
  visit(copy);
  return copy;
}

// The trajectory record and the trainer's events for generated Python classes (contracts/record.py, contracts/events.py),
// shaped as the run config is. The record's parts are named by their zod titles (src/core/record.ts), the same classes
// wherever a record appears (the env protocol's grade and scan requests, the sample event). Each event is a class
// named after its type; `v`, `time` and `run` are the writer's to stamp (base/events.py) and `type` is the class's, so
// the classes default them and a caller builds an event from its own fields. What the classes leave out (bounds,
// lengths) the JSON Schemas still check, before a class is made from a line read and after one is written.
const recordPython = forPython(
  z.toJSONSchema(RecordSchema, { io: 'output', target: 'draft-2020-12' }) as Json,
  {},
  'record',
);
const WRITER_DEFAULTS: Record<string, unknown> = { v: PROTOCOL_VERSION, time: 0, run: '' };
const eventsPython = {
  title: 'TrainerEvent',
  description: `A trainer event (protocol v${PROTOCOL_VERSION}, src/core/events.ts), one class per type.`,
  oneOf: EventSchema.options.map((option) => {
    const type = option.shape.type.value;
    const name = `${type.replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase())}Event`;
    const branch = forPython(
      z.toJSONSchema(option, { io: 'output', target: 'draft-2020-12' }) as Json,
      { '': name },
      'event',
    );
    const props = branch.properties as Record<string, Json>;
    for (const [key, value] of Object.entries({ ...WRITER_DEFAULTS, type })) props[key].default = value;
    return branch;
  }),
  discriminator: { propertyName: 'type' },
};
// The search boundary meter's report (contracts/boundary_report.py): what evaluation/boundary_report.py builds and writes.
const BOUNDARY_REPORT_CLASS_NAMES: Record<string, string> = {
  '': 'BoundaryReport',
  summary: 'BoundarySummary',
  truth: 'BoundaryTruth',
  'rows[]': 'BoundaryRow',
  'rows[].responses': 'BoundaryResponses',
  'rows[].truth': 'BoundaryTruthRow',
};
const boundaryReportPython = forPython(
  z.toJSONSchema(BoundaryReportSchema, { io: 'output', target: 'draft-2020-12' }) as Json,
  BOUNDARY_REPORT_CLASS_NAMES,
  'boundary-report',
);
const runConfigOutput = forPython(
  z.toJSONSchema(RunConfigSchema, { io: 'output', target: 'draft-2020-12' }) as Json,
  PYTHON_CLASS_NAMES,
);

const files: [string, unknown][] = [
  ['run-config.schema.json', runConfig],
  ['dialects.json', dialects],
  ['prompts.json', DIALECT_PROMPTS],
  ['events.schema.json', events],
  ['record.schema.json', record],
  ['codes.json', codes],
  ['search.json', searchTable],
  ['stages.json', { stages: STAGE_TABLE, pipeline: PIPELINE_INFO, results: RESULT_SETTINGS }],
  ['names.json', NAME_RULE],
  ['python/run-config.schema.json', runConfigOutput],
  ['errors.json', TRAINER_ERRORS],
  ['metrics.json', AGENT_METRICS],
  ['histograms.json', HISTOGRAMS],
  ['system-metrics.json', SYSTEM_METRICS],
  ['rewards.json', rewards],
  [
    'config-paths.json',
    {
      rule: "relative to the run config file's directory",
      fields: CONFIG_PATH_FIELDS,
      commands: CONFIG_COMMAND_FIELDS,
      legacy_defaults: CONFIG_LEGACY_DEFAULTS,
    },
  ],
  ['python/env-protocol.schema.json', envProtocol],
  [
    'python/agent-metric.schema.json',
    {
      title: 'AgentMetric',
      description: 'An agent metric of graded trajectories (src/core/metrics.ts AGENT_METRICS).',
      type: 'string',
      enum: AGENT_METRIC_NAMES,
    },
  ],
  [
    'python/stage-info.schema.json',
    { ...z.toJSONSchema(StageInfoSchema, { io: 'output', target: 'draft-2020-12' }), title: 'StageInfo' },
  ],
  [
    'boundary-report.schema.json',
    {
      ...z.toJSONSchema(BoundaryReportSchema, { io: 'output', target: 'draft-2020-12' }),
      title: 'Search boundary report',
    },
  ],
  [
    'line-index.json',
    {
      replaces: LINE_INDEX_REPLACES,
      suffix: LINE_INDEX_SUFFIX,
      entry: {
        ...z.toJSONSchema(LineIndexEntrySchema, { io: 'output', target: 'draft-2020-12' }),
        title: 'Line index entry',
      },
    },
  ],
  [
    'python/line-index-entry.schema.json',
    forPython(
      z.toJSONSchema(LineIndexEntrySchema, { io: 'output', target: 'draft-2020-12' }) as Json,
      { '': 'LineIndexEntry' },
      'line index entry',
    ),
  ],
  [
    'python/boundary-class.schema.json',
    {
      title: 'BoundaryClass',
      description: "A question's class by the search boundary meter (src/core/boundaryClasses.ts BOUNDARY_CLASSES).",
      type: 'string',
      enum: BOUNDARY_CLASS_NAMES,
    },
  ],
  [
    'python/boundary-metric.schema.json',
    {
      title: 'BoundaryMetric',
      description: 'A metric of the search boundary meter run inside RL (src/core/metrics.ts BOUNDARY_METRICS).',
      type: 'string',
      enum: BOUNDARY_METRIC_NAMES,
    },
  ],
  ['python/tables.schema.json', tablesPython],
  ['python/record.schema.json', recordPython],
  ['python/events.schema.json', eventsPython],
  ['python/boundary-report.schema.json', boundaryReportPython],
  [
    'python/error-code.schema.json',
    {
      title: 'ErrorCode',
      description: 'What stopped a trainer command (src/core/events.ts TRAINER_ERRORS).',
      type: 'string',
      enum: TRAINER_ERROR_CODES,
    },
  ],
];
mkdirSync(join(outDir, 'python'), { recursive: true });
for (const [name, value] of files) {
  writeFileSync(join(outDir, name), `${JSON.stringify(value, null, 2)}\n`);
  console.log(`gen-schemas: wrote ${join(outDir, name)}`);
}
