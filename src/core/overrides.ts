// `key=value` overrides of a run config on a command line (`stages.rl2.lr=1e-5`, the way verl's Hydra takes them),
// typed by the run config's JSON Schema: the key must name a field of the schema, and the text becomes the type
// the field takes (number, integer, boolean, null, string, list, object). The merged config is then validated by
// the same schema as the file. The trainer implements the same rules in Python (coa_trainer/base/overrides.py);
// both run test/conformance/overrides.json.
//
// Syntax:  a.b.c=value   set (intermediate objects that are null or absent are created)
//          ~a.b.c        remove (the schema's default applies again)
// Values:  null, true/false, numbers (finite: 1e-5, -3, .5), [a,b] lists (Hydra's: items typed by the schema,
//          quotes optional), {"k": v} JSON objects, anything else a string ('…' or "…" quotes are stripped).
import { z } from 'zod';
import { RunConfigSchema } from './config';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = Record<string, unknown>;

/** An override that cannot apply: `key` is the dotted key as given, `text` the whole argument. */
export class OverrideError extends Error {
  constructor(
    readonly text: string,
    readonly key: string,
    readonly detail: string,
  ) {
    super(`override ${text}: ${key ? `${key}: ` : ''}${detail}`);
    this.name = 'OverrideError';
  }
}

export interface Override {
  /** The argument as given, e.g. `stages.rl2.lr=1e-5`. */
  text: string;
  path: string[];
  /** Absent for a removal (`~key`). */
  value?: Json;
}

let runConfigJsonSchema: Schema | null = null;
/** The run config's JSON Schema as the editor and the trainer read it (schemas/run-config.schema.json). */
export function runConfigSchema(): Schema {
  runConfigJsonSchema ??= z.toJSONSchema(RunConfigSchema, { io: 'input', target: 'draft-2020-12' }) as Schema;
  return runConfigJsonSchema;
}

/** `key=value` or `~key`? (An argument that is neither is not an override, e.g. a file name.) */
export function isOverride(arg: string): boolean {
  return /^~?[A-Za-z_$][\w$-]*(\.[\w$-]+)*(=|$)/.test(arg) && (arg.startsWith('~') || arg.includes('='));
}

const INTEGER = /^[+-]?\d+$/;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** The branches a schema node allows (anyOf flattened; `type: [a, b]` split). */
function branches(schema: Schema): Schema[] {
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Schema[]).flatMap(branches);
  if (Array.isArray(schema.type)) return (schema.type as string[]).map((t) => ({ ...schema, type: t }));
  return [schema];
}

const typeWords: Record<string, string> = {
  null: 'null',
  boolean: 'true or false',
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  array: 'a list [a,b]',
  object: 'an object {"k": v}',
};

function describe(options: Schema[]): string {
  const words = new Set<string>();
  for (const b of options) {
    if (Array.isArray(b.enum)) words.add(`one of ${(b.enum as Json[]).map((v) => JSON.stringify(v)).join(', ')}`);
    else if (typeof b.type === 'string') words.add(typeWords[b.type] ?? b.type);
    else words.add('any value');
  }
  return [...words].join(' or ');
}

function unquote(text: string): string | null {
  const t = text.trim();
  if (t.length >= 2 && (t[0] === "'" || t[0] === '"') && t[t.length - 1] === t[0]) return t.slice(1, -1);
  return null;
}

/** Hydra's list items: split at top-level commas (quotes and nested brackets kept together). */
function splitList(inner: string): string[] | null {
  if (inner.trim() === '') return [];
  const items: string[] = [];
  let depth = 0;
  let quote = '';
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '[' || c === '{') depth++;
    else if (c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 0) {
      items.push(inner.slice(start, i));
      start = i + 1;
    }
    if (depth < 0) return null;
  }
  if (quote || depth !== 0) return null;
  items.push(inner.slice(start));
  return items.map((s) => s.trim());
}

/** A value with no schema to follow (a record's entries, e.g. reward.params): the most specific reading. */
function untyped(text: string): Json {
  const t = text.trim();
  const q = unquote(t);
  if (q !== null) return q;
  if (t === 'null') return null;
  if (/^(true|false)$/i.test(t)) return t.toLowerCase() === 'true';
  if (NUMBER.test(t)) return Number(t);
  if (t.startsWith('[') && t.endsWith(']')) {
    const items = splitList(t.slice(1, -1));
    if (items) return items.map(untyped);
  }
  if (t.startsWith('{')) {
    try {
      return JSON.parse(t) as Json;
    } catch {
      /* a string after all */
    }
  }
  return text;
}

/** The text typed by a schema node; a string saying what it takes when it cannot be. */
export function typeValue(schema: Schema, text: string): { value: Json } | { error: string } {
  const options = branches(schema);
  if (options.every((b) => b.type === undefined && b.enum === undefined)) return { value: untyped(text) };
  const t = text.trim();
  const quoted = unquote(t);
  for (const b of options) {
    const type = b.type as string | undefined;
    if (Array.isArray(b.enum)) {
      const want = quoted ?? t;
      const hit = (b.enum as Json[]).find((v) => v === want || (typeof v !== 'string' && JSON.stringify(v) === t));
      if (hit !== undefined) return { value: hit };
      continue;
    }
    if (quoted !== null) {
      if (type === 'string') return { value: quoted };
      continue;
    }
    if (type === 'null' && t === 'null') return { value: null };
    if (type === 'boolean' && /^(true|false)$/i.test(t)) return { value: t.toLowerCase() === 'true' };
    if (type === 'integer' && INTEGER.test(t) && Number.isSafeInteger(Number(t))) return { value: Number(t) };
    if (type === 'number' && NUMBER.test(t) && Number.isFinite(Number(t))) return { value: Number(t) };
    if (type === 'array' && t.startsWith('[') && t.endsWith(']')) {
      const items = splitList(t.slice(1, -1));
      if (!items) return { error: `takes ${describe(options)}; ${JSON.stringify(text)} is not a well-formed list` };
      const out: Json[] = [];
      for (const [i, item] of items.entries()) {
        const typed = typeValue((b.items as Schema | undefined) ?? {}, item);
        if ('error' in typed) return { error: `item ${i + 1}: ${typed.error}` };
        out.push(typed.value);
      }
      return { value: out };
    }
    if (type === 'object' && t.startsWith('{')) {
      try {
        const v = JSON.parse(t) as Json;
        if (v !== null && typeof v === 'object' && !Array.isArray(v)) return { value: v };
      } catch {
        return { error: `takes ${describe(options)}; ${JSON.stringify(text)} is not a JSON object` };
      }
    }
  }
  if (options.some((b) => b.type === 'string' && b.enum === undefined)) return { value: text };
  return { error: `takes ${describe(options)}; ${JSON.stringify(text)} is not one` };
}

/** The object branch of a schema node (a nullable object has one), or null when it has none. */
function objectBranch(schema: Schema): Schema | null {
  return branches(schema).find((b) => b.type === 'object') ?? null;
}

/** The schema node of `path` (each segment a field of an object or a record's key), or why there is none. */
function fieldSchema(root: Schema, path: string[]): { schema: Schema } | { error: string } {
  let node = root;
  for (const [i, key] of path.entries()) {
    const obj = objectBranch(node);
    const here = path.slice(0, i).join('.') || 'the run config';
    if (!obj) return { error: `${here} is not an object, so it has no field ${key}` };
    const props = (obj.properties ?? {}) as Record<string, Schema>;
    if (Object.hasOwn(props, key)) node = props[key];
    else if (obj.additionalProperties && obj.additionalProperties !== false)
      node = obj.additionalProperties === true ? {} : (obj.additionalProperties as Schema);
    else {
      const known = Object.keys(props).filter((k) => k !== '$schema');
      return { error: `unknown key: ${here} has ${known.join(', ')}` };
    }
  }
  return { schema: node };
}

/** Parse one argument against the run config schema. Throws OverrideError naming the key. */
export function parseOverride(text: string, schema: Schema = runConfigSchema()): Override {
  const remove = text.startsWith('~');
  const eq = text.indexOf('=');
  const key = remove ? text.slice(1, eq < 0 ? undefined : eq) : eq < 0 ? text : text.slice(0, eq);
  if (!key || (!remove && eq < 0)) throw new OverrideError(text, key, 'give key=value (or ~key to remove a field)');
  if (remove && eq >= 0) throw new OverrideError(text, key, '~key removes a field and takes no value');
  const path = key.split('.');
  if (path.some((p) => p === '')) throw new OverrideError(text, key, 'an empty part in the key');
  if (path.some((p) => /^\d+$/.test(p)))
    throw new OverrideError(text, key, 'list items cannot be set one by one: give the whole list, e.g. key=[a,b]');
  const field = fieldSchema(schema, path);
  if ('error' in field) throw new OverrideError(text, key, field.error);
  if (remove) return { text, path };
  const typed = typeValue(field.schema, text.slice(eq + 1));
  if ('error' in typed) throw new OverrideError(text, key, typed.error);
  return { text, path, value: typed.value };
}

/** Apply parsed overrides to a raw (unvalidated) config, in order; returns a new object. */
export function applyOverrides(raw: unknown, overrides: Override[]): unknown {
  // structuredClone, not a JSON round trip: that turned a file's 1e999 (Infinity) into null, which a nullable setting
  // accepts (the trainer refuses it).
  const root = structuredClone(raw ?? {}) as Record<string, Json>;
  if (root === null || typeof root !== 'object' || Array.isArray(root)) {
    if (overrides.length)
      throw new OverrideError(overrides[0].text, overrides[0].path.join('.'), 'the run config is not a JSON object');
    return root;
  }
  for (const o of overrides) {
    let node: Record<string, Json> = root;
    for (const [i, key] of o.path.slice(0, -1).entries()) {
      const next = node[key];
      if (next === undefined || next === null) node = node[key] = {};
      else if (typeof next === 'object' && !Array.isArray(next)) node = next;
      else
        throw new OverrideError(
          o.text,
          o.path.join('.'),
          `${o.path.slice(0, i + 1).join('.')} is ${JSON.stringify(next)} in the config, not an object`,
        );
    }
    const last = o.path[o.path.length - 1];
    if (o.value === undefined) delete node[last];
    else node[last] = o.value;
  }
  return root;
}

/** The override that set `path` or a field above it (the last one), for naming it in a validation error. */
export function overrideFor(overrides: Override[], path: (string | number)[]): Override | undefined {
  const key = path.map(String);
  if (!key.length) return undefined;
  return [...overrides]
    .reverse()
    .find((o) => o.path.every((p, i) => key[i] === p) || key.every((p, i) => o.path[i] === p));
}
