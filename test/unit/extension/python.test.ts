// Trainer interpreter discovery: setting, then workspace .venv, then the extension's .venv, then PATH.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolvePython, venvPython } from '../../../src/extension/python';

test('search order', () => {
  const has =
    (...paths: string[]) =>
    (p: string) =>
      paths.includes(p);
  const base = { workspaceFolders: ['/ws/a', '/ws/b'], extensionPath: '/ext', platform: 'linux' as const };
  assert.deepEqual(resolvePython({ ...base, setting: ' /opt/py ', exists: has() }), {
    path: '/opt/py',
    source: 'setting',
  });
  assert.deepEqual(resolvePython({ ...base, exists: has('/ws/b/.venv/bin/python', '/ext/.venv/bin/python') }), {
    path: '/ws/b/.venv/bin/python',
    source: 'workspace-venv',
  });
  assert.deepEqual(resolvePython({ ...base, exists: has('/ext/.venv/bin/python') }), {
    path: '/ext/.venv/bin/python',
    source: 'extension-venv',
  });
  assert.deepEqual(resolvePython({ ...base, exists: has() }), { path: 'python3', source: 'path' });
  assert.equal(venvPython('C:\\ws', 'win32').endsWith('python.exe'), true);
});

test('the venv that npm install made in this checkout is found', () => {
  const root = require('node:path').join(__dirname, '../../..');
  const found = resolvePython({ workspaceFolders: [root], extensionPath: '/nonexistent' });
  assert.equal(found.source, 'workspace-venv', 'npm install should have created .venv (scripts/setup-python.mjs)');
});
