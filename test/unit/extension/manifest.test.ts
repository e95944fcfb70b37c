// package.json (the extension manifest) agrees with the code: command table, settings, grammar files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { STAGE_PICKS } from '../../../src/extension/providers/train/picks';

const root = join(__dirname, '../../..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

test('every contributed command is in the command table and has an enablement key', () => {
  const src = readFileSync(join(root, 'src/extension/commands.ts'), 'utf8');
  const table = [...src.matchAll(/^ {2}'(coaStudio\.[A-Za-z.]+)':/gm)].map((m) => m[1]).sort();
  const contributed = pkg.contributes.commands.map((c: { command: string }) => c.command).sort();
  assert.deepEqual(contributed, table);
  for (const c of pkg.contributes.commands) assert.ok(c.enablement, `${c.command} has no enablement`);
});

test('settings read by config.ts are all contributed', () => {
  const src = readFileSync(join(root, 'src/extension/config.ts'), 'utf8');
  const read = [...src.matchAll(/\bget\('([^']+)'/g)].map((m) => `coaStudio.${m[1]}`).sort();
  assert.deepEqual(read, Object.keys(pkg.contributes.configuration.properties).sort());
});

test('manifest basics and grammar files exist', () => {
  assert.equal(pkg.name, 'coa-studio');
  assert.equal(pkg.displayName, 'CoA Studio');
  assert.ok(pkg.engines.vscode);
  assert.equal(pkg.main, './dist/extension.js');
  assert.ok(pkg.bin.coa);
  for (const g of pkg.contributes.grammars) assert.ok(existsSync(join(root, g.path)), g.path);
  for (const l of pkg.contributes.languages) assert.ok(existsSync(join(root, l.configuration)), l.configuration);
});

// ---- the training host: training commands, trust, Runs view, run-config schema contribution

test('training, resume, the demo, replay, fork and ONNX export stay offered in Restricted Mode; each handler asks for trust before it runs anything', () => {
  const byId = Object.fromEntries(pkg.contributes.commands.map((c: { command: string }) => [c.command, c]));
  // A command disabled by `isWorkspaceTrusted` vanished from the palette and made the walkthrough's link do nothing,
  // with no word of why: the handler's requireTrust says why and how to trust instead.
  const guarded: Record<string, [string, string]> = {
    'coaStudio.trainStage': ['src/extension/providers/train/index.ts', 'async trainStage('],
    'coaStudio.resumeRun': ['src/extension/providers/train/index.ts', 'async resumeRun('],
    'coaStudio.runDemo': ['src/extension/providers/train/index.ts', 'async trainStage('],
    'coaStudio.collectTrajectories': ['src/extension/providers/train/index.ts', 'async collectTrajectories('],
    'coaStudio.runs.exportOnnx': ['src/extension/providers/train/index.ts', 'async exportOnnx('],
    'coaStudio.forkFromStep': ['src/extension/providers/replay/fork.ts', 'export async function forkFromStep('],
  };
  for (const [id, [file, fn]] of Object.entries(guarded)) {
    assert.doesNotMatch(byId[id].enablement, /isWorkspaceTrusted/, id);
    const src = readFileSync(join(root, file), 'utf8');
    const body = src.slice(src.indexOf(fn));
    const trust = body.indexOf('requireTrust(');
    assert.ok(
      trust >= 0 && trust < body.slice(1).search(/\n {0,2}(async |export |function )/),
      `${id}: ${fn} asks requireTrust first`,
    );
  }
  // Viewing stays available.
  for (const id of ['coaStudio.runs.refresh', 'coaStudio.runs.openPanel', 'coaStudio.runs.reveal'])
    assert.doesNotMatch(byId[id].enablement, /isWorkspaceTrusted/, id);
  assert.equal(pkg.capabilities.untrustedWorkspaces.supported, 'limited');
});

test('the Runs view: activity-bar container, welcome content with the demo button, menus name real commands', () => {
  const c = pkg.contributes;
  const container = c.viewsContainers.activitybar.find((v: { id: string }) => v.id === 'coaStudio');
  assert.equal(container.title, 'CoA Studio');
  assert.ok(existsSync(join(root, container.icon)), container.icon);
  assert.deepEqual(
    c.views.coaStudio.map((v: { id: string }) => v.id),
    ['coaStudio.runs'],
  );
  const welcome = c.viewsWelcome
    .filter((w: { view: string }) => w.view === 'coaStudio.runs')
    .map((w: { contents: string }) => w.contents)
    .join('\n');
  assert.match(welcome, /\[Run the embedded demo\]\(command:coaStudio\.runDemo\)/);
  const ids = new Set(c.commands.map((x: { command: string }) => x.command));
  for (const [menu, items] of Object.entries(c.menus as Record<string, { command: string }[]>)) {
    for (const item of items) assert.ok(ids.has(item.command), `${menu}: ${item.command} is not a contributed command`);
  }
  const actions = c.menus['view/item/context'].map((m: { command: string }) => m.command);
  for (const id of [
    'coaStudio.runs.openPanel',
    'coaStudio.runs.openRollouts',
    'coaStudio.resumeRun',
    'coaStudio.runs.exportOnnx',
    'coaStudio.runs.reveal',
    'coaStudio.runs.delete',
  ]) {
    assert.ok(actions.includes(id), `${id} is not in the Runs view's item menu`);
  }
  assert.ok(pkg.activationEvents.includes('workspaceContains:runs/*/events.jsonl'));
});

test('run configs (*.run.json, runs/*/config.json) are validated by the generated schema', () => {
  const v = pkg.contributes.jsonValidation.find((j: { url: string }) => j.url === './schemas/run-config.schema.json');
  assert.ok(v, 'jsonValidation for the run config');
  assert.ok(v.fileMatch.includes('*.run.json'));
  assert.ok(v.fileMatch.some((f: string) => f.endsWith('runs/*/config.json')));
});

test('Watch verl/TRL Run is offered in any folder, before anything activated the extension', () => {
  // A verl or TRL workspace holds none of the files that activate us; invoking the command activates the extension.
  const watch = pkg.contributes.commands.find((c: { command: string }) => c.command === 'coaStudio.watchRun');
  assert.match(watch.enablement, /workspaceFolderCount > 0/);
  assert.doesNotMatch(watch.enablement, /isWorkspaceTrusted/); // viewing only: untrusted workspaces too
});

// ---- an untrusted workspace cannot point replay's searches (with the user's token) at its own host

test('replay needs a trusted workspace and the env server settings are restricted', () => {
  const restricted: string[] = pkg.capabilities.untrustedWorkspaces.restrictedConfigurations ?? [];
  for (const key of ['coaStudio.envServer.url', 'coaStudio.envServer.token', 'coaStudio.replay.checkpoint']) {
    assert.ok(restricted.includes(key), `${key} is not in restrictedConfigurations`);
    assert.ok(pkg.contributes.configuration.properties[key], `${key} is contributed`);
  }
  // The replay commands and the notebook controllers (which run cells without a command) reach replayCell: it asks
  // for trust first.
  const src = readFileSync(join(root, 'src/extension/providers/replay/controller.ts'), 'utf8');
  const body = src.slice(src.indexOf('async function replayCell('));
  assert.ok(
    body.indexOf("requireTrust('Replay')") >= 0 &&
      body.indexOf("requireTrust('Replay')") < body.indexOf('checkpointFor('),
    'replayCell checks trust before it loads a model or reads the server settings',
  );
});

test('the walkthrough: starts with the demo, then the panel, rollouts, your own trajectories, a stage; media shipped, links and completion events name real commands', () => {
  const [w] = pkg.contributes.walkthroughs;
  assert.deepEqual(
    w.steps.map((s: { id: string }) => s.id),
    ['runDemo', 'watchPanel', 'openRollouts', 'openTrajectory', 'trainStage'],
  );
  const ours = new Set(pkg.contributes.commands.map((c: { command: string }) => c.command));
  // Built-in commands used by the steps, and the view's own focus command VS Code makes for coaStudio.runs.
  const builtin = new Set(['workbench.action.files.openFile', 'coaStudio.runs.focus']);
  for (const s of w.steps) {
    assert.ok(existsSync(join(root, s.media.markdown)), `${s.id}: ${s.media.markdown} missing`);
    const ignore = readFileSync(join(root, '.vscodeignore'), 'utf8');
    assert.match(ignore, /^!media\/\*\*$/m, 'media/ is shipped in the vsix');
    const links = [...s.description.matchAll(/\(command:([\w.]+)\)/g)].map((m: RegExpMatchArray) => m[1]);
    assert.ok(links.length >= 1, `${s.id} has a button`);
    for (const c of [
      ...links,
      ...s.completionEvents
        .filter((e: string) => e.startsWith('onCommand:'))
        .map((e: string) => e.slice('onCommand:'.length)),
    ]) {
      assert.ok(ours.has(c) || builtin.has(c), `${s.id}: unknown command ${c}`);
    }
  }
});

test('the walkthrough says what a .vsix user can do: no coa command line as the way, only stages Train Stage offers', () => {
  const [w] = pkg.contributes.walkthroughs;
  for (const s of w.steps) {
    const md = readFileSync(join(root, s.media.markdown), 'utf8');
    // `coa …` exists only in a clone of the repository; a line may mention it after the editor's way.
    for (const line of md.split('\n').filter((l: string) => /`(npx )?coa \w/.test(l)))
      assert.match(line, /clone of the repository/, `${s.media.markdown}: ${line}`);
  }
  const offered = new Set(STAGE_PICKS.map((p) => p.label));
  const table = readFileSync(join(root, 'media/walkthrough/train-stage.md'), 'utf8')
    .split('\n')
    .filter((l) => /^\| [A-Z]/.test(l) && !l.startsWith('| stage'))
    .map((l) => l.split('|')[1].trim());
  assert.ok(table.length >= 6);
  for (const label of table)
    assert.ok(offered.has(label), `train-stage.md lists ${label}, which Train Stage does not offer`);
  const step = w.steps.find((s: { id: string }) => s.id === 'trainStage');
  for (const label of /\(([^)]*)\) or the whole pipeline/.exec(step.description)![1].split(', '))
    assert.ok(offered.has(label) || label === 'SFT-1/2/3', `${label} in the step text`);
});
