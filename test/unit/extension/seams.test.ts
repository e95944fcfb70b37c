// Features of the extension call each other through the context's typed members (ctx.ts: `livePanels.open(runDir)`,
// `records.show(loc)`, `train.exportOnnx(dir)`), not through `vscode.commands.executeCommand('coaStudio.…', …)`:
// a string command takes `unknown` arguments, so a caller and its callee can drift apart without a type error (the
// live panel once guessed among four argument shapes). Commands stay the user's way in (palette, menus, status
// bar, tree items), which pass an id as data, not a call. Read with TypeScript's parser, not a regular expression.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? tsFiles(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** `executeCommand(<id>, …)` calls whose id is one of ours (a string literal or template starting `coaStudio.`). */
function ownCommandCalls(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isPropertyAccessExpression(callee)
        ? callee.name.text
        : ts.isIdentifier(callee)
          ? callee.text
          : '';
      const id = node.arguments[0];
      if (
        name === 'executeCommand' &&
        id &&
        (ts.isStringLiteral(id) || ts.isNoSubstitutionTemplateLiteral(id)) &&
        id.text.startsWith('coaStudio.')
      ) {
        const { line } = source.getLineAndCharacterOfPosition(node.getStart());
        found.push(`${relative(ROOT, file)}:${line + 1} ${id.text}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test("the reader finds a coaStudio command call and leaves VS Code's own commands alone (the check can fail)", () => {
  const text = [
    "await vscode.commands.executeCommand('coaStudio.openLivePanel', vscode.Uri.file(dir));",
    "await vscode.commands.executeCommand('vscode.openWith', uri, 'coa-trajectories');",
    'void executeCommand(`coaStudio.openRecord`, { file, line });',
  ].join('\n');
  assert.deepEqual(ownCommandCalls(join(ROOT, 'src/extension/x.ts'), text), [
    'src/extension/x.ts:1 coaStudio.openLivePanel',
    'src/extension/x.ts:3 coaStudio.openRecord',
  ]);
});

test("no feature of the extension (nor a page) calls a coaStudio command: they use the context's typed members", () => {
  const files = [...tsFiles(join(ROOT, 'src', 'extension')), ...tsFiles(join(ROOT, 'webview'))];
  assert.ok(files.length > 50, `${files.length} files read`);
  const calls = files.flatMap((f) => ownCommandCalls(f, readFileSync(f, 'utf8')));
  assert.deepEqual(calls, [], `call the context (src/extension/ctx.ts) instead:\n${calls.join('\n')}`);
});
