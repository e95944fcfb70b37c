// Which Python runs the trainer: the `coaStudio.python` setting, else a workspace's .venv (made by
// `npm install` in a CoA Studio checkout), else the extension's own .venv, else python3 on PATH.
// Pure so it can be tested without VS Code.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export interface PythonCandidate {
  path: string;
  source: 'setting' | 'workspace-venv' | 'extension-venv' | 'path';
}

export interface PythonSearch {
  setting?: string;
  workspaceFolders: string[];
  extensionPath: string;
  platform?: NodeJS.Platform;
  exists?: (path: string) => boolean;
}

export function venvPython(dir: string, platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? join(dir, '.venv', 'Scripts', 'python.exe') : join(dir, '.venv', 'bin', 'python');
}

export function resolvePython(search: PythonSearch): PythonCandidate {
  const exists = search.exists ?? existsSync;
  const platform = search.platform ?? process.platform;
  if (search.setting && search.setting.trim()) return { path: search.setting.trim(), source: 'setting' };
  for (const folder of search.workspaceFolders) {
    const p = venvPython(folder, platform);
    if (exists(p)) return { path: p, source: 'workspace-venv' };
  }
  const own = venvPython(search.extensionPath, platform);
  if (exists(own)) return { path: own, source: 'extension-venv' };
  return { path: platform === 'win32' ? 'python' : 'python3', source: 'path' };
}
