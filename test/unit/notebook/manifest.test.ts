// package.json and scripts/build.mjs agree with the notebook's ids: notebook types, renderer, custom editor, setting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  NOTEBOOK_TYPE,
  NOTEBOOK_TYPE_ANY_JSONL,
  RENDERER_ID,
  REWARD_MIME,
} from '../../../src/extension/providers/notebook/cells';
import { BROWSER_VIEW_TYPE } from '../../../src/extension/providers/browser/summary';

const root = join(__dirname, '../../..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const build = readFileSync(join(root, 'scripts/build.mjs'), 'utf8');

test('notebook types: default for *.coa.jsonl, option for any *.jsonl', () => {
  const nb = pkg.contributes.notebooks as { type: string; selector: { filenamePattern: string }[]; priority: string }[];
  const coa = nb.find((n) => n.type === NOTEBOOK_TYPE)!;
  assert.deepEqual([coa.selector[0].filenamePattern, coa.priority], ['*.coa.jsonl', 'default']);
  const any = nb.find((n) => n.type === NOTEBOOK_TYPE_ANY_JSONL)!;
  assert.deepEqual([any.selector[0].filenamePattern, any.priority], ['*.jsonl', 'option']);
});

test('renderer: the reward MIME, an ESM bundle that build.mjs makes', () => {
  const r = (pkg.contributes.notebookRenderer as { id: string; entrypoint: string; mimeTypes: string[] }[]).find(
    (x) => x.id === RENDERER_ID,
  )!;
  assert.deepEqual(r.mimeTypes, [REWARD_MIME]);
  assert.equal(r.entrypoint, './dist/webview/notebook-renderer.js');
  assert.match(
    build,
    /\['webview\/notebook-renderer\/index\.ts', 'dist\/webview\/notebook-renderer\.js', \{ \.\.\.browser, format: 'esm' \}\]/,
  );
});

test('large-file browser: an optional custom editor for *.jsonl, its worker and page bundled, a threshold setting', () => {
  const ed = (
    pkg.contributes.customEditors as { viewType: string; selector: { filenamePattern: string }[]; priority: string }[]
  ).find((x) => x.viewType === BROWSER_VIEW_TYPE)!;
  assert.deepEqual([ed.selector[0].filenamePattern, ed.priority], ['*.jsonl', 'option']);
  assert.match(build, /'dist\/browser-worker\.js'/);
  assert.match(build, /'dist\/webview\/browser\.js'/);
  assert.equal(pkg.contributes.configuration.properties['coaStudio.notebook.largeFileMB'].default, 50);
});
