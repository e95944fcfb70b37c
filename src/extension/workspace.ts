// The workspace facts several features ask: where runs live, and whether code from this folder may run.
import * as vscode from 'vscode';

/**
 * Training, resuming, replay, the environment server and ONNX export run code from the workspace: trusted only.
 * Their commands stay in the palette and the walkthrough in Restricted Mode (a command hidden by its enablement, or
 * a walkthrough link that does nothing, leaves the user guessing): each handler asks here first, and this says why
 * not and how to trust the folder.
 */
export async function requireTrust(what: string): Promise<boolean> {
  if (vscode.workspace.isTrusted) return true;
  const pick = await vscode.window.showWarningMessage(
    `CoA: ${what} needs a trusted workspace, and this folder is open in Restricted Mode: it would run the Python trainer and a local environment server with configs and code from this folder. To allow it, trust the folder ("Manage Workspace Trust" → Trust). Viewing runs, trajectories and panels works without trust.`,
    TRUST_ACTION,
  );
  if (pick) await vscode.commands.executeCommand('workbench.trust.manage');
  return false;
}

/** The button of requireTrust's message. */
export const TRUST_ACTION = 'Manage Workspace Trust';

export function workspaceRoot(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}
