// The workspace facts several features ask: where runs live, and whether code from this folder may run.
import * as vscode from 'vscode';

/** Training, resuming, the environment server and ONNX export run code from the workspace: trusted only. */
export async function requireTrust(what: string): Promise<boolean> {
  if (vscode.workspace.isTrusted) return true;
  const pick = await vscode.window.showWarningMessage(
    `${what} is unavailable in an untrusted workspace: it runs the Python trainer and a local environment server with configs and code from this folder. Viewing runs, trajectories and panels still works.`,
    'Manage Workspace Trust',
  );
  if (pick) await vscode.commands.executeCommand('workbench.trust.manage');
  return false;
}

export function workspaceRoot(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}
