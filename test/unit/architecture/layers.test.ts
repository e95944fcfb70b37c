// The TypeScript tree's floors, and the two rules that keep them: no module imports a floor above its own (nor a
// peer on its floor), and no import cycle, type-only imports included — a cycle of types still ties two modules so
// that neither can be read, tested or moved without the other. Imports are read with TypeScript's own
// pre-processor (static, type-only, re-exports, dynamic import() and require()), not a regular expression, and
// resolved to files as the bundler resolves them (a relative path, `.ts`, or a folder's index.ts).
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');

/**
 * The floors, lowest first. A module may import its own unit and any unit on a lower floor; units that share a floor
 * are peers and import neither each other nor anything above. A unit is a list of path prefixes (a folder ends in
 * '/'); a file belongs to the unit of its longest matching prefix, and a file in no unit fails the test.
 */
export const FLOORS: { floor: string; units: Record<string, string[]> }[] = [
  // The single sources of truth: record, events, rules, rewards, config schema. Imports no other floor.
  { floor: 'core', units: { core: ['src/core/'] } },
  // What a webview page and the extension host say to each other: types both bundles share.
  { floor: 'protocols', units: { protocols: ['src/protocols/'] } },
  // The environment server; the webview pages (each its own bundle, reading only core and protocols).
  {
    floor: 'engines and pages',
    units: {
      env: ['src/env/'],
      'page live-panel': ['webview/live-panel/'],
      'page browser': ['webview/browser/'],
      'page compare': ['webview/compare/'],
      'page group': ['webview/group/'],
      'page boundary': ['webview/boundary/'],
      'page notebook-renderer': ['webview/notebook-renderer/'],
    },
  },
  // The replay engine (ONNX decoding, the agent loop): independent of VS Code.
  { floor: 'replay', units: { replay: ['src/replay/'] } },
  // The two programs other than the extension: the `coa` command line and the trajectory language server.
  { floor: 'programs', units: { cli: ['src/cli/'], server: ['src/server/'] } },
  // What every editor feature may use: settings, workspace trust, child processes, webview HTML, the language client.
  {
    floor: 'extension services',
    units: {
      'extension services': [
        'src/extension/process/',
        'src/extension/webview/',
        'src/extension/config.ts',
        'src/extension/workspace.ts',
        'src/extension/python.ts',
        'src/extension/languageClient.ts',
        'src/extension/openFileDiagnostics.ts',
        'src/extension/commandArgs.ts',
      ],
    },
  },
  // The editor features, one folder each; they may use one another (the cycle rule keeps that a tree).
  { floor: 'extension providers', units: { providers: ['src/extension/providers/'] } },
  // activate(): the context object that owns every feature, and the command table.
  {
    floor: 'extension main',
    units: { 'extension main': ['src/extension/main.ts', 'src/extension/ctx.ts', 'src/extension/commands.ts'] },
  },
];

/** Packages only some units may import: the editor's API belongs to the extension, the server's to the server. */
const PACKAGE_UNITS: Record<string, string[]> = {
  vscode: ['extension services', 'providers', 'extension main'],
  'vscode-languageclient': ['extension services', 'providers', 'extension main'],
  'vscode-languageserver': ['server'],
};

interface Unit {
  name: string;
  floor: number;
}

function unitOf(path: string): Unit | undefined {
  let best: { unit: Unit; length: number } | undefined;
  FLOORS.forEach(({ units }, floor) => {
    for (const [name, prefixes] of Object.entries(units)) {
      for (const p of prefixes) {
        if ((path === p || path.startsWith(p)) && (!best || p.length > best.length))
          best = { unit: { name, floor }, length: p.length };
      }
    }
  });
  return best?.unit;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory())
      return name === 'node_modules' || path === join(ROOT, 'src', 'trainer') ? [] : tsFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const toRepo = (abs: string) => relative(ROOT, abs).split(sep).join('/');

/** The module specifiers a file imports (every kind TypeScript sees). */
export function importsOf(text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
}

/** The repository path a relative specifier names, as the bundler resolves it; null when nothing is there. */
function resolveRelative(fromRepoPath: string, spec: string, exists: (repoPath: string) => boolean): string | null {
  const base = toRepo(resolve(ROOT, dirname(fromRepoPath), spec));
  for (const candidate of [base, `${base}.ts`, `${base}/index.ts`]) if (exists(candidate)) return candidate;
  return null;
}

type Graph = Map<string, { spec: string; target: string }[]>;

/**
 * Every source file's relative imports, resolved. `sources`: repository path → text. Package imports are left out
 * of the graph (they cannot close a cycle of ours) and checked by `layerProblems`.
 */
export function importGraph(
  sources: Map<string, string>,
  exists: (repoPath: string) => boolean,
): { graph: Graph; unresolved: string[] } {
  const graph: Graph = new Map();
  const unresolved: string[] = [];
  for (const [file, text] of sources) {
    const edges: { spec: string; target: string }[] = [];
    for (const spec of importsOf(text)) {
      if (!spec.startsWith('.')) continue;
      const target = resolveRelative(file, spec, exists);
      if (target) edges.push({ spec, target });
      else unresolved.push(`${file} imports ${spec}, which resolves to no file`);
    }
    graph.set(file, edges);
  }
  return { graph, unresolved };
}

/** Imports that go up a floor, across to a peer, or to a package the unit may not use. */
export function layerProblems(sources: Map<string, string>, graph: Graph): string[] {
  const problems: string[] = [];
  for (const [file, text] of sources) {
    const from = unitOf(file);
    if (!from) {
      problems.push(`${file} is on no floor: add its folder to FLOORS (test/unit/architecture/layers.test.ts)`);
      continue;
    }
    for (const { spec, target } of graph.get(file) ?? []) {
      const to = unitOf(target);
      if (!to) {
        if (!target.startsWith('src/') && !target.startsWith('webview/') && target !== 'package.json')
          problems.push(`${file} imports ${target} (${spec}), outside src/ and webview/`);
        continue;
      }
      if (to.name === from.name) continue;
      if (to.floor > from.floor)
        problems.push(
          `${file} (${from.name}, floor ${FLOORS[from.floor].floor}) imports ${target} (${to.name}), a floor above`,
        );
      else if (to.floor === from.floor)
        problems.push(`${file} (${from.name}) imports ${target} (${to.name}), a peer on its floor`);
    }
    for (const spec of importsOf(text)) {
      const pkg = Object.keys(PACKAGE_UNITS).find((p) => spec === p || spec.startsWith(`${p}/`));
      if (pkg && !PACKAGE_UNITS[pkg].includes(from.name))
        problems.push(
          `${file} (${from.name}) imports the package ${pkg}, which only ${PACKAGE_UNITS[pkg].join(', ')} may use`,
        );
    }
  }
  return problems;
}

/** The import cycles: each strongly connected component of more than one file (or a file importing itself), as one
 * closed path through it. Tarjan's algorithm, iterative so a long chain cannot overflow the stack. */
export function importCycles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  const targets = (v: string) => (graph.get(v) ?? []).map((e) => e.target).filter((t) => graph.has(t));
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: { v: string; edges: string[]; i: number }[] = [];
    const open = (v: string) => {
      index.set(v, next);
      low.set(v, next++);
      stack.push(v);
      onStack.add(v);
      work.push({ v, edges: targets(v), i: 0 });
    };
    open(root);
    while (work.length) {
      const top = work[work.length - 1];
      if (top.i < top.edges.length) {
        const w = top.edges[top.i++];
        if (!index.has(w)) open(w);
        else if (onStack.has(w)) low.set(top.v, Math.min(low.get(top.v)!, index.get(w)!));
        continue;
      }
      work.pop();
      if (work.length) low.set(work[work.length - 1].v, Math.min(low.get(work[work.length - 1].v)!, low.get(top.v)!));
      if (low.get(top.v) === index.get(top.v)) {
        const component: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          component.push(w);
        } while (w !== top.v);
        if (component.length > 1 || targets(top.v).includes(top.v)) components.push(component);
      }
    }
  }
  return components.map((c) => closedPath(graph, new Set(c)));
}

/** A cycle through a strongly connected component, as the files in import order, ending where it started. */
function closedPath(graph: Graph, members: Set<string>): string[] {
  const start = [...members].sort()[0];
  // Breadth-first from start's imports back to start, inside the component: the shortest cycle through it.
  const before = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const v = queue.shift()!;
    for (const { target } of graph.get(v) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) {
        const path = [start];
        for (let u = v; u !== start; u = before.get(u)!) path.splice(1, 0, u);
        return [...path, start];
      }
      if (!before.has(target)) {
        before.set(target, v);
        queue.push(target);
      }
    }
  }
  return [start, start];
}

let tree: Map<string, string> | undefined;
/** src/ and webview/ (the trainer's Python left out), read once for the tests below. */
function readTree(): Map<string, string> {
  tree ??= new Map(
    [...tsFiles(join(ROOT, 'src')), ...tsFiles(join(ROOT, 'webview'))].map((f) => [toRepo(f), readFileSync(f, 'utf8')]),
  );
  return tree;
}

const existsInRepo = (p: string) => existsSync(join(ROOT, p)) && statSync(join(ROOT, p)).isFile();

test('the checks can fail: a type-only cycle, an upward import, a peer import and the editor package are each caught', () => {
  const sources = new Map([
    ['src/replay/a.ts', "import type { B } from './b';\nexport type A = { b?: B };"],
    ['src/replay/b.ts', "import type { A } from './a';\nexport type B = { a?: A };"],
    ['src/protocols/page.ts', "import type { Row } from '../extension/providers/browser/summary';"],
    ['src/extension/providers/browser/summary.ts', 'export interface Row { id: string }'],
    ['src/cli/main.ts', "export { serve } from '../server/main';"],
    ['src/server/main.ts', 'export const serve = 1;'],
    ['webview/compare/main.ts', "const m = import('../live-panel/model');\nimport * as vscode from 'vscode';"],
    ['webview/live-panel/model.ts', 'export {};'],
    ['src/core/ok.ts', "import { z } from 'zod';\nimport type { A } from '../core/ok';"],
  ]);
  const { graph, unresolved } = importGraph(sources, (p) => sources.has(p));
  assert.deepEqual(unresolved, []);
  assert.deepEqual(importCycles(graph), [
    ['src/replay/a.ts', 'src/replay/b.ts', 'src/replay/a.ts'],
    ['src/core/ok.ts', 'src/core/ok.ts'],
  ]);
  assert.deepEqual(layerProblems(sources, graph), [
    'src/protocols/page.ts (protocols, floor protocols) imports src/extension/providers/browser/summary.ts (providers), a floor above',
    'src/cli/main.ts (cli) imports src/server/main.ts (server), a peer on its floor',
    'webview/compare/main.ts (page compare) imports webview/live-panel/model.ts (page live-panel), a peer on its floor',
    'webview/compare/main.ts (page compare) imports the package vscode, which only extension services, providers, extension main may use',
  ]);
  const nowhere = new Map([['src/new/x.ts', 'export {};']]);
  assert.deepEqual(layerProblems(nowhere, importGraph(nowhere, () => false).graph), [
    'src/new/x.ts is on no floor: add its folder to FLOORS (test/unit/architecture/layers.test.ts)',
  ]);
});

test('every relative import of src/ and webview/ resolves to a file (the graph below is complete)', () => {
  const sources = readTree();
  assert.ok(sources.size > 150, `${sources.size} files read`);
  const { unresolved } = importGraph(sources, existsInRepo);
  assert.deepEqual(unresolved, []);
});

test('no module of src/ or webview/ imports a floor above its own, a peer, or a package its floor may not use', () => {
  const sources = readTree();
  const { graph } = importGraph(sources, existsInRepo);
  const problems = layerProblems(sources, graph);
  assert.deepEqual(problems, [], `imports against the floors:\n${problems.join('\n')}`);
});

test('src/ and webview/ have no import cycle, type-only imports included', () => {
  const { graph } = importGraph(readTree(), existsInRepo);
  const cycles = importCycles(graph);
  assert.deepEqual(cycles, [], `import cycles:\n${cycles.map((c) => c.join(' → ')).join('\n')}`);
});
