// Generates the TextMate grammars and language configurations of CoA Studio from the dialect table in
// src/core/dialects.ts, so the tag names live in one place. Two variants of the same rules are built:
//   raw  — `*.coa` files, where tags and their content are written as is;
//   json — inside a JSON string of a `*.jsonl` line, where `"` is `\"`, `\` is `\\` and a newline is `\n`,
//          and every block must stop at the string's closing quote (or the end of the line) when unclosed.
// Run `node scripts/grammar-gen.mjs` after editing dialects.ts; scripts/test-grammar.mjs fails when the
// checked-in files differ from what this script would write.
import { writeFileSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Paths of the generated files, relative to the repository root. */
export const OUTPUTS = {
  coa: 'syntaxes/coa.tmLanguage.json',
  jsonl: 'syntaxes/coa-jsonl.tmLanguage.json',
  injection: 'syntaxes/coa-jsonl.injection.tmLanguage.json',
  config: 'language-configuration.json',
  jsonlConfig: 'language-configuration.coa-jsonl.json',
};

/** Same tag-name shape as the core scanner's TAG_RE. */
const NAME = String.raw`[A-Za-z_][A-Za-z0-9_.:-]{0,63}`;
const reEscape = (s) => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
const alt = (names) => [...new Set(names)].map(reEscape).join('|');

/** Tag vocabulary of all four dialects, read from the core's dialect table. */
export function vocabulary(dialectsModule) {
  const { DIALECTS, DEFAULT_TOOLS, bare } = dialectsModule;
  const v = {
    think: [],
    observation: [],
    answer: [],
    fixed: [],
    jsonAction: [],
    tools: [...DEFAULT_TOOLS],
    boxed: false,
  };
  for (const d of Object.values(DIALECTS)) {
    v.think.push(bare(d.think.open));
    v.observation.push(bare(d.observation.open));
    if (d.answer.style === 'tag') v.answer.push(bare(d.answer.tags.open));
    else v.boxed = true;
    if (d.action.style === 'fixed')
      v.fixed.push({ open: bare(d.action.tags.open), close: bare(d.action.tags.close), tool: d.action.tool });
    if (d.action.style === 'json') v.jsonAction.push(bare(d.action.tags.open));
  }
  for (const k of ['think', 'observation', 'answer', 'jsonAction']) v[k] = [...new Set(v[k])];
  v.fixed = v.fixed.filter((f, i) => v.fixed.findIndex((g) => g.open === f.open) === i);
  // Every name with a fixed meaning; an unknown `<name>` that is not one of these may be a per-tool action.
  v.structural = [
    ...new Set([
      ...v.think,
      ...v.observation,
      ...v.answer,
      ...v.jsonAction,
      ...v.fixed.flatMap((f) => [f.open, f.close]),
    ]),
  ];
  return v;
}

/** Escaping conventions of the text the rules run over. */
function modes() {
  return {
    raw: {
      id: 'raw',
      boxed: String.raw`\\boxed`,
      // A JSON string delimiter and the characters of a JSON string body (for Hermes tool calls).
      q: '"',
      strChars: String.raw`(?:[^"\\]|\\.)*`,
      // Rest of the current line, for "is the closing tag on this line" lookaheads.
      lineRest: '.*?',
      stops: [],
    },
    json: {
      id: 'json',
      boxed: String.raw`\\\\boxed`,
      q: String.raw`\\"`,
      // Plain char | inner escape of `"` or `\` (\\\" or \\\\) | other inner escape (\\n) | outer escape (\n).
      strChars: String.raw`(?:[^"\\]|\\\\\\["\\]|\\\\[^"\\]|\\[^"\\])*`,
      lineRest: String.raw`(?:[^"\\]|\\.)*?`,
      // An unescaped quote ends the host JSON string; a JSONL record never spans lines.
      stops: ['"', '$'],
    },
  };
}

const look = (parts) => `(?=${parts.join('|')})`;

function buildRules(v, m) {
  const tag = (names) => names.map((n) => `<${reEscape(n)}>`);
  const closeTag = (names) => names.map((n) => `</${reEscape(n)}>`);
  const structuralTags = [...tag(v.structural), ...closeTag(v.structural)];
  const escapes = m.id === 'json' ? [{ include: '#string-escape' }] : [];
  const repo = {};

  // ---- think ----
  repo.think = {
    name: 'meta.block.think.coa',
    begin: `(<)(${alt(v.think)})(>)`,
    beginCaptures: {
      1: { name: 'punctuation.definition.tag.begin.coa' },
      2: { name: 'entity.name.tag.think.coa' },
      3: { name: 'punctuation.definition.tag.end.coa' },
    },
    // A second `<think>` or an `<answer>` means this block was left unclosed: stop before it.
    end: `(</)(\\2)(>)|${look([...tag(v.think), ...tag(v.answer), ...m.stops])}`,
    endCaptures: {
      1: { name: 'punctuation.definition.tag.begin.coa' },
      2: { name: 'entity.name.tag.think.coa' },
      3: { name: 'punctuation.definition.tag.end.coa' },
    },
    contentName: 'markup.italic.think.coa',
    // AutoCoA writes its searches and results inside <think>.
    patterns: [
      { include: '#action' },
      { include: '#observation' },
      { include: '#boxed' },
      { include: '#stray-close' },
      { include: '#unknown-tag' },
      ...escapes,
    ],
  };

  // ---- actions ----
  const actionStop = look([...structuralTags, ...tag(v.tools), ...m.stops]);
  const actionName = 'entity.name.tag.action.coa entity.name.function.tool.coa';
  const perTool = (begin) => ({
    name: 'meta.block.action.coa',
    begin,
    beginCaptures: {
      1: { name: 'punctuation.definition.tag.begin.coa' },
      2: { name: actionName },
      3: { name: 'punctuation.definition.tag.end.coa' },
    },
    end: `(</)(\\2)(>)|${actionStop}`,
    endCaptures: {
      1: { name: 'punctuation.definition.tag.begin.coa' },
      2: { name: actionName },
      3: { name: 'punctuation.definition.tag.end.coa' },
    },
    contentName: 'string.unquoted.argument.coa',
    patterns: [...escapes],
  });
  // The default tools are always actions; any other `<name>` is a per-tool action (an unknown tool for the
  // core's COA011) when its closing tag follows on the same line, or (raw text) when it ends its line.
  repo['action-default-tool'] = perTool(`(<)(${alt(v.tools)})(>)`);
  const pairedLater = m.id === 'raw' ? `(?=${m.lineRest}</\\2>|\\s*$)` : `(?=${m.lineRest}</\\2>)`;
  repo['action-any-tool'] = perTool(`(<)(?!(?:${alt([...v.structural, ...v.tools])})>)(${NAME})(>)${pairedLater}`);

  repo['action-fixed'] = { patterns: v.fixed.map((f) => fixedAction(f, actionStop, escapes)) };

  repo['action-json'] = {
    name: 'meta.block.tool-call.coa',
    begin: `(<)(${alt(v.jsonAction)})(>)`,
    beginCaptures: {
      1: { name: 'punctuation.definition.tag.begin.coa' },
      2: { name: 'entity.name.tag.action.coa support.function.action.coa' },
      3: { name: 'punctuation.definition.tag.end.coa' },
    },
    end: `(</)(\\2)(>)|${look([...tag(v.think), ...tag(v.answer), ...tag(v.jsonAction), ...tag(v.observation), ...m.stops])}`,
    endCaptures: {
      1: { name: 'punctuation.definition.tag.begin.coa' },
      2: { name: 'entity.name.tag.action.coa support.function.action.coa' },
      3: { name: 'punctuation.definition.tag.end.coa' },
    },
    // Raw text: an embedded JSON region, so VS Code applies JSON's brackets and word rules inside it.
    // In a JSON string it cannot be `meta.embedded` (that would stop it counting as string text).
    contentName: m.id === 'raw' ? 'meta.embedded.block.json' : 'meta.json.tool-call.coa',
    patterns: [{ include: '#json-value' }, ...escapes],
  };

  repo.action = {
    patterns: [
      { include: '#action-json' },
      { include: '#action-fixed' },
      { include: '#action-default-tool' },
      { include: '#action-any-tool' },
    ],
  };

  // ---- observation ----
  repo.observation = {
    name: 'meta.block.observation.coa',
    begin: `(<)(${alt(v.observation)})(>)`,
    beginCaptures: {
      1: { name: 'punctuation.definition.tag.begin.coa' },
      2: { name: 'entity.name.tag.observation.coa entity.name.type.observation.coa' },
      3: { name: 'punctuation.definition.tag.end.coa' },
    },
    // Environment text may hold anything; only a new <think>/<answer> or the end of <think> ends an unclosed one.
    end: `(</)(\\2)(>)|${look([...tag(v.think), ...closeTag(v.think), ...tag(v.answer), ...m.stops])}`,
    endCaptures: {
      1: { name: 'punctuation.definition.tag.begin.coa' },
      2: { name: 'entity.name.tag.observation.coa entity.name.type.observation.coa' },
      3: { name: 'punctuation.definition.tag.end.coa' },
    },
    contentName: 'markup.quote.observation.coa',
    patterns: [{ include: '#search-r1-doc' }, ...escapes],
  };
  // Search-R1 retrieval: `Doc 1(Title: "Herman Wouk") text…`
  const title = m.id === 'raw' ? String.raw`"[^"]*"|[^)"]*` : String.raw`\\"(?:[^"\\]|\\[^"])*?\\"|[^)"\\]*`;
  repo['search-r1-doc'] = {
    match: String.raw`\b(Doc\s+\d+)(\()(Title:)\s*(${title})(\))`,
    name: 'meta.document.header.coa',
    captures: {
      1: { name: 'markup.heading.document.coa' },
      2: { name: 'punctuation.section.document.begin.coa' },
      3: { name: 'keyword.other.title.coa' },
      4: { name: 'entity.name.section.document-title.coa' },
      5: { name: 'punctuation.section.document.end.coa' },
    },
  };

  // ---- answer ----
  const answerName = 'entity.name.tag.answer.coa keyword.control.answer.coa';
  repo.answer = {
    name: 'meta.block.answer.coa',
    begin: `(<)(${alt(v.answer)})(>)`,
    beginCaptures: {
      1: { name: 'punctuation.definition.tag.begin.coa' },
      2: { name: answerName },
      3: { name: 'punctuation.definition.tag.end.coa' },
    },
    end: `(</)(\\2)(>)|${look([...tag(v.think), ...tag(v.answer), ...m.stops])}`,
    endCaptures: {
      1: { name: 'punctuation.definition.tag.begin.coa' },
      2: { name: answerName },
      3: { name: 'punctuation.definition.tag.end.coa' },
    },
    contentName: 'markup.bold.answer.coa',
    patterns: [{ include: '#boxed' }, ...escapes],
  };
  const boxStop = look([...tag(v.think), ...closeTag(v.think), ...tag(v.answer), ...closeTag(v.answer), ...m.stops]);
  repo.boxed = {
    name: 'meta.block.boxed.coa',
    begin: `(${m.boxed})(\\{)`,
    beginCaptures: {
      1: { name: 'keyword.control.answer.boxed.coa' },
      2: { name: 'punctuation.section.boxed.begin.coa' },
    },
    end: `(\\})|${boxStop}`,
    endCaptures: { 1: { name: 'punctuation.section.boxed.end.coa' } },
    contentName: 'markup.bold.answer.coa',
    patterns: [{ include: '#boxed-braces' }, ...escapes],
  };
  // Braces inside \boxed{} are balanced: `\boxed{\frac{1}{2}}` ends at the last brace.
  repo['boxed-braces'] = {
    begin: String.raw`\{`,
    end: String.raw`\}|${boxStop}`,
    patterns: [{ include: '#boxed-braces' }, ...escapes],
  };

  // ---- stray and unknown tags ----
  // A `</think>` with no opening: AutoCoA / R1 distills pre-fill `<think>` in the chat template, so it is legal there.
  repo['implicit-think-close'] = {
    match: `(</)(${alt(v.think)})(>)`,
    name: 'meta.tag.think.implicit-open.coa',
    captures: {
      1: { name: 'punctuation.definition.tag.begin.coa' },
      2: { name: 'entity.name.tag.think.coa' },
      3: { name: 'punctuation.definition.tag.end.coa' },
    },
  };
  const closers = [...v.observation, ...v.answer, ...v.jsonAction, ...v.fixed.map((f) => f.close), ...v.tools].filter(
    (n) => !v.think.includes(n),
  );
  repo['stray-close'] = { match: `</(?:${alt(closers)})>`, name: 'meta.tag.stray.coa invalid.illegal.stray-tag.coa' };
  repo['unknown-tag'] = { match: `</?${NAME}>`, name: 'meta.tag.unknown.coa invalid.deprecated.unknown-tag.coa' };

  // ---- JSON (Hermes tool-call bodies) ----
  Object.assign(
    repo,
    jsonRules(m, look([...closeTag(v.jsonAction), ...m.stops]), m.id === 'json' ? [{ include: '#string-escape' }] : []),
  );
  const q = m.q;
  repo['json-tool-name'] = {
    match: `((${q})name(${q}))\\s*(:)\\s*((${q})(${m.strChars})(${q}))`,
    captures: {
      1: { name: 'string.json support.type.property-name.json' },
      2: { name: 'punctuation.support.type.property-name.begin.json' },
      3: { name: 'punctuation.support.type.property-name.end.json' },
      4: { name: 'punctuation.separator.dictionary.key-value.json' },
      5: { name: 'string.quoted.double.json' },
      6: { name: 'punctuation.definition.string.begin.json' },
      7: { name: 'entity.name.function.tool.coa' },
      8: { name: 'punctuation.definition.string.end.json' },
    },
  };
  repo['json-object'].patterns.unshift({ include: '#json-tool-name' });

  if (m.id === 'json') {
    repo['string-escape'] = {
      match: String.raw`\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})`,
      name: 'constant.character.escape.json',
    };
  }
  return repo;
}

function fixedAction(f, stop, escapes) {
  // `<begin_search>`: the whole name is the action tag, the tool's name inside it is marked as the tool.
  const split = (name) => {
    const i = name.lastIndexOf(f.tool);
    return i < 0
      ? `(${reEscape(name)})()`
      : `(${reEscape(name.slice(0, i))}(${reEscape(f.tool)})${reEscape(name.slice(i + f.tool.length))})`;
  };
  const caps = {
    1: { name: 'punctuation.definition.tag.begin.coa' },
    2: { name: 'entity.name.tag.action.coa support.function.action.coa' },
    3: { name: 'entity.name.function.tool.coa' },
    4: { name: 'punctuation.definition.tag.end.coa' },
  };
  return {
    name: 'meta.block.action.coa',
    begin: `(<)${split(f.open)}(>)`,
    beginCaptures: caps,
    end: `(</)${split(f.close)}(>)|${stop}`,
    endCaptures: caps,
    contentName: 'string.unquoted.argument.coa',
    patterns: [...escapes],
  };
}

/**
 * Minimal JSON rules with VS Code's JSON scope names (so themes colour them as JSON). `stop` ends every
 * open construct early: unclosed braces in a model's tool call must not swallow the rest of the document.
 */
function jsonRules(m, stop, extra) {
  const q = m.q;
  const innerEscape =
    m.id === 'raw'
      ? [
          { match: String.raw`\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})`, name: 'constant.character.escape.json' },
          { match: String.raw`\\.`, name: 'invalid.illegal.unrecognized-string-escape.json' },
        ]
      : [
          { match: String.raw`\\\\(?:\\["\\]|u[0-9a-fA-F]{4}|[^"\\])`, name: 'constant.character.escape.json' },
          { match: String.raw`\\[^"\\]`, name: 'constant.character.escape.json' },
        ];
  const stringRule = (name, p) => ({
    name,
    begin: q,
    beginCaptures: { 0: { name: `punctuation.${p}.begin.json` } },
    end: `(${q})|${stop}`,
    endCaptures: { 1: { name: `punctuation.${p}.end.json` } },
    patterns: innerEscape,
  });
  return {
    'json-value': {
      patterns: [
        { include: '#json-object' },
        { include: '#json-array' },
        { include: '#json-string' },
        { include: '#json-number' },
        { include: '#json-constant' },
        ...extra,
      ],
    },
    'json-object': {
      name: 'meta.structure.dictionary.json',
      begin: String.raw`\{`,
      beginCaptures: { 0: { name: 'punctuation.definition.dictionary.begin.json' } },
      end: String.raw`(\})|${stop}`,
      endCaptures: { 1: { name: 'punctuation.definition.dictionary.end.json' } },
      patterns: [
        { include: '#json-key' },
        { include: '#json-dict-value' },
        { match: ',', name: 'punctuation.separator.dictionary.pair.json' },
        ...extra,
      ],
    },
    'json-key': stringRule('string.json support.type.property-name.json', 'support.type.property-name'),
    'json-dict-value': {
      name: 'meta.structure.dictionary.value.json',
      begin: ':',
      beginCaptures: { 0: { name: 'punctuation.separator.dictionary.key-value.json' } },
      end: String.raw`(,)|(?=\})|${stop}`,
      endCaptures: { 1: { name: 'punctuation.separator.dictionary.pair.json' } },
      patterns: [{ include: '#json-value' }],
    },
    'json-array': {
      name: 'meta.structure.array.json',
      begin: String.raw`\[`,
      beginCaptures: { 0: { name: 'punctuation.definition.array.begin.json' } },
      end: String.raw`(\])|${stop}`,
      endCaptures: { 1: { name: 'punctuation.definition.array.end.json' } },
      patterns: [{ include: '#json-value' }, { match: ',', name: 'punctuation.separator.array.json' }, ...extra],
    },
    'json-string': stringRule('string.quoted.double.json', 'definition.string'),
    'json-number': { match: String.raw`-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?`, name: 'constant.numeric.json' },
    'json-constant': { match: String.raw`\b(?:true|false|null)\b`, name: 'constant.language.json' },
  };
}

const BLOCK_SCOPES = [
  'meta.block.think.coa',
  'meta.block.action.coa',
  'meta.block.tool-call.coa',
  'meta.block.observation.coa',
  'meta.block.answer.coa',
  'meta.block.boxed.coa',
];
const TOP = [
  { include: '#think' },
  { include: '#action' },
  { include: '#observation' },
  { include: '#answer' },
  { include: '#boxed' },
  { include: '#implicit-think-close' },
  { include: '#stray-close' },
  { include: '#unknown-tag' },
];

export function buildAll(dialectsModule) {
  const v = vocabulary(dialectsModule);
  const { raw, json } = modes();
  const coa = {
    $schema: 'https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json',
    name: 'CoA trajectory',
    scopeName: 'source.coa',
    fileTypes: ['coa'],
    comment: 'GENERATED by scripts/grammar-gen.mjs from src/core/dialects.ts. Do not edit by hand.',
    patterns: TOP,
    repository: buildRules(v, raw),
  };
  const injection = {
    $schema: 'https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json',
    name: 'CoA tags in JSON strings',
    scopeName: 'coa.jsonl.injection',
    comment:
      'GENERATED by scripts/grammar-gen.mjs. Injected into JSON string values; the exclusions keep the top-level rules out of blocks this grammar opened itself (their own patterns handle nesting).',
    injectionSelector: `L:string.quoted.double.json ${BLOCK_SCOPES.map((s) => `-${s}`).join(' ')}`,
    patterns: TOP,
    repository: buildRules(v, json),
  };
  // Host for `*.coa.jsonl`: JSON Lines with VS Code's JSON scope names; each line is one record, so every
  // construct also ends at the end of its line.
  const hostStop = '$';
  const jsonl = {
    $schema: 'https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json',
    name: 'CoA trajectories (JSON Lines)',
    scopeName: 'source.coa.jsonl',
    fileTypes: ['coa.jsonl'],
    comment:
      'GENERATED by scripts/grammar-gen.mjs. Tags inside strings come from the injection grammar coa.jsonl.injection.',
    patterns: [
      { include: '#json-value' },
      { match: String.raw`[^\s{}\[\]",:]+`, name: 'invalid.illegal.unexpected-text.json' },
    ],
    repository: jsonRules(raw, `(?=${hostStop})`, []),
  };
  const tagPairs = [
    ...v.think.map((n) => [`<${n}>`, `</${n}>`]),
    ...v.tools.map((n) => [`<${n}>`, `</${n}>`]),
    ...v.fixed.map((f) => [`<${f.open}>`, `</${f.close}>`]),
    ...v.jsonAction.map((n) => [`<${n}>`, `</${n}>`]),
    ...v.observation.map((n) => [`<${n}>`, `</${n}>`]),
    ...v.answer.map((n) => [`<${n}>`, `</${n}>`]),
  ];
  const blockNames = alt([
    ...v.think,
    ...v.observation,
    ...v.answer,
    ...v.jsonAction,
    ...v.fixed.map((f) => f.open),
    ...v.tools,
  ]);
  const closeNames = alt([
    ...v.think,
    ...v.observation,
    ...v.answer,
    ...v.jsonAction,
    ...v.fixed.map((f) => f.close),
    ...v.tools,
  ]);
  const config = {
    comment:
      "GENERATED by scripts/grammar-gen.mjs. Tags are brackets (matching, jump-to-bracket) but not colourised, so the grammar's per-kind colours stay visible.",
    brackets: [...tagPairs, ['{', '}']],
    colorizedBracketPairs: [['{', '}']],
    // Typing the `>` of `<think>` inserts `</think>`. No `notIn`: tags are typed inside any text.
    autoClosingPairs: [...tagPairs.map(([open, close]) => ({ open, close })), { open: '{', close: '}' }],
    autoCloseBefore: ';:.,=}])>` \n\t',
    surroundingPairs: [['{', '}']],
    folding: {
      // A block folds from a line that opens a tag (not closed on that same line) to the line that closes it.
      // An end line closes a tag that it did not open itself (so inline `<search> q </search>` ends nothing).
      markers: {
        start: `<(?:${blockNames})>(?!.*</(?:${closeNames})>)`,
        end: `^(?:(?!<(?:${blockNames})>).)*</(?:${closeNames})>`,
      },
    },
    wordPattern: String.raw`[^\s<>{}()\[\]"',.;:!?]+`,
  };
  const jsonlConfig = {
    comment: 'GENERATED by scripts/grammar-gen.mjs. JSON brackets; tag pairs auto-close inside strings too.',
    brackets: [
      ['{', '}'],
      ['[', ']'],
    ],
    autoClosingPairs: [
      { open: '{', close: '}', notIn: ['string'] },
      { open: '[', close: ']', notIn: ['string'] },
      { open: '"', close: '"', notIn: ['string'] },
      ...tagPairs.map(([open, close]) => ({ open, close })),
    ],
    surroundingPairs: [
      ['{', '}'],
      ['[', ']'],
      ['"', '"'],
    ],
  };
  return { coa, jsonl, injection, config, jsonlConfig };
}

/** The files as they should be on disk (path → text). */
export function renderAll(dialectsModule) {
  const built = buildAll(dialectsModule);
  const out = {};
  for (const [key, path] of Object.entries(OUTPUTS)) out[path] = JSON.stringify(built[key], null, 2) + '\n';
  return out;
}

export async function loadDialects() {
  const { tsImport } = await import('tsx/esm/api');
  return tsImport(pathToFileURL(join(ROOT, 'src/core/dialects.ts')).href, import.meta.url);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = renderAll(await loadDialects());
  for (const [path, text] of Object.entries(files)) {
    const full = join(ROOT, path);
    let old = '';
    try {
      old = readFileSync(full, 'utf8');
    } catch {
      /* new file */
    }
    if (old !== text) writeFileSync(full, text);
    console.log(`${old === text ? 'unchanged' : 'wrote'} ${path}`);
  }
}
