// src/core is the single source of truth everything else imports; it must import nothing from the layers built on
// it (the environment server, the extension, the language server, the webview pages) nor the editor's API, or the
// CLI, the trainer's schemas and the language server would drag those in. Imports are read with TypeScript's own
// pre-processor (static, type-only, re-exports, dynamic import() and require()), not a regular expression.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const CORE = join(ROOT, 'src', 'core');
/** Folders core may not reach, and packages that belong to the editor. */
const FORBIDDEN_DIRS = ['src/env', 'src/extension', 'src/server', 'webview'];
const FORBIDDEN_PACKAGES = ['vscode', 'vscode-languageclient', 'vscode-languageserver'];

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? tsFiles(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** The module specifiers a file imports (every kind TypeScript sees). */
function importsOf(text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
}

/** Why `spec`, imported from `file`, breaks the layering (undefined: allowed). */
function violation(file: string, spec: string): string | undefined {
  if (spec.startsWith('.')) {
    const target = relative(ROOT, resolve(dirname(file), spec)).split(sep).join('/');
    const dir = FORBIDDEN_DIRS.find((d) => target === d || target.startsWith(`${d}/`));
    return dir && `imports ${dir} (${spec})`;
  }
  const pkg = FORBIDDEN_PACKAGES.find((p) => spec === p || spec.startsWith(`${p}/`));
  return pkg && `imports the editor package ${pkg}`;
}

test('the import reader sees every kind of import and flags each forbidden layer (the check can fail)', () => {
  const file = join(CORE, 'data', 'example.ts');
  const text = [
    "import { readCorpus } from '../../env/corpus';",
    "import type { Ctx } from '../../extension/ctx';",
    "export { x } from '../../server/main';",
    "const p = import('../../../webview/live-panel/main');",
    "import * as vscode from 'vscode';",
    "import { locate } from '../jsonl';",
  ].join('\n');
  const found = importsOf(text).map((s) => violation(file, s));
  assert.deepEqual(found, [
    'imports src/env (../../env/corpus)',
    'imports src/extension (../../extension/ctx)',
    'imports src/server (../../server/main)',
    'imports webview (../../../webview/live-panel/main)',
    'imports the editor package vscode',
    undefined,
  ]);
});

test('src/core imports nothing from src/env, src/extension, src/server or webview', () => {
  const files = tsFiles(CORE);
  assert.ok(files.length > 20, `src/core holds ${files.length} .ts files`);
  const problems = files.flatMap((file) =>
    importsOf(readFileSync(file, 'utf8')).flatMap((spec) => {
      const why = violation(file, spec);
      return why ? [`${relative(ROOT, file)} ${why}`] : [];
    }));
  assert.deepEqual(problems, [], `core must stay below the layers built on it:\n${problems.join('\n')}`);
});
