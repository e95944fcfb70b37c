// Typed reader for the `coaStudio.*` settings (one place that knows their names and defaults).
import * as vscode from 'vscode';
import type { DialectName } from '../core/dialects';
import type { Scheme } from '../core/record';

export interface CoaConfig {
  dialect: DialectName | 'auto';
  rewardScheme: Scheme;
  strictness: 'lenient' | 'strict';
  tools: string[];
  otcC: number;
  otcAlpha: number;
  envServerUrl: string;
  envServerToken: string;
  /** Trainer interpreter override; see python.ts for the search order. */
  python: string;
}

export function readConfig(scope?: vscode.ConfigurationScope): CoaConfig {
  const c = vscode.workspace.getConfiguration('coaStudio', scope);
  return {
    dialect: c.get('dialect', 'auto'),
    rewardScheme: c.get('rewardScheme', 'em'),
    strictness: c.get('strictness', 'lenient'),
    tools: c.get('tools', ['search']),
    otcC: c.get('otc.c', 4),
    otcAlpha: c.get('otc.alpha', 1),
    envServerUrl: c.get('envServer.url', ''),
    envServerToken: c.get('envServer.token', ''),
    python: c.get('python', ''),
  };
}
