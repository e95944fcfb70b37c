// Real-editor harness: code-server (from scripts/setup-e2e.mjs) with the packaged .vsix installed into fresh
// user-data/extensions directories, driven by Playwright over Debian chromium with a fresh profile.
// Every start has a matching close() that kills code-server's whole process group (extension host, language
// server, trainer) and the browser, even when a test fails. Screenshots go to .cache/artifacts/e2e/.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  createWriteStream,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Frame, type Page } from 'playwright-core';

export const repoRoot = resolve(import.meta.dirname, '..', '..');
export const artifactsDir = join(repoRoot, '.cache', 'artifacts', 'e2e');
const cache = join(repoRoot, '.cache', 'e2e');

/** Paths made by scripts/setup-e2e.mjs and scripts/package-vsix.mjs (overridable by env for other layouts). */
export const paths = {
  node: process.env.COA_E2E_NODE ?? join(cache, 'node-24.9.0', 'bin', 'node'),
  codeServer:
    process.env.COA_E2E_CODE_SERVER ??
    join(cache, 'code-server-4.139.1', 'node_modules', 'code-server', 'out', 'node', 'entry.js'),
  vsix: process.env.COA_E2E_VSIX ?? join(cache, 'coa-studio.vsix'),
  chromium: process.env.COA_E2E_CHROMIUM ?? '/usr/bin/chromium',
  python: join(repoRoot, '.venv', 'bin', 'python'),
};

export interface EditorOptions {
  /** Names the temp dirs and the screenshots. */
  name: string;
  /** Files of the workspace: relative path → content (bytes for binary files). */
  files?: Record<string, string | Uint8Array>;
  /** Extra user settings. */
  settings?: Record<string, unknown>;
  /** More .vsix files installed next to the extension (bench/notebook's extension-host probe). */
  extraVsix?: string[];
  /** Open the folder in Restricted Mode: workspace trust on, the folder not trusted (no prompt). */
  untrusted?: boolean;
}

export interface Editor {
  page: Page;
  workspace: string;
  url: string;
  /** Full-page screenshot into .cache/artifacts/e2e/<name>-<step>.png. */
  shot(step: string): Promise<string>;
  /** Console errors of the page (the workbench's own harmless 404s filtered out). */
  consoleErrors: string[];
  /** The editor's log folder while it runs (the extension host's log, our Output channel); kept at close. */
  logsDir: string;
  close(): Promise<void>;
}

const BASE_SETTINGS = {
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'chat.disableAIFeatures': true,
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'workbench.colorTheme': 'Default Dark Modern',
  'security.workspace.trust.enabled': false,
  'telemetry.telemetryLevel': 'off',
  'extensions.ignoreRecommendations': true,
  'extensions.autoCheckUpdates': false,
  'update.mode': 'none',
  'editor.minimap.enabled': false,
  'files.autoSave': 'off',
  'git.enabled': false,
};

async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

function codeServerArgs(userData: string, extensions: string, trust = false): string[] {
  return [
    paths.codeServer,
    '--auth',
    'none',
    '--user-data-dir',
    userData,
    '--extensions-dir',
    extensions,
    '--disable-telemetry',
    '--disable-update-check',
    ...(trust ? [] : ['--disable-workspace-trust']),
    '--disable-getting-started-override',
  ];
}

/** Workspace trust on, nothing trusted, no startup prompt: the folder opens in Restricted Mode. */
const RESTRICTED_SETTINGS = {
  'security.workspace.trust.enabled': true,
  'security.workspace.trust.startupPrompt': 'never',
  'security.workspace.trust.emptyWindow': false,
};

/** Installs the vsix into an extensions dir (code-server's own CLI, same dirs as the server). */
function installWithCli(userData: string, extensions: string, vsix: string): void {
  if (!existsSync(vsix)) throw new Error(`no vsix at ${vsix}: run node scripts/package-vsix.mjs`);
  const r = spawnSync(paths.node, [...codeServerArgs(userData, extensions), '--install-extension', vsix, '--force'], {
    encoding: 'utf8',
    timeout: 180_000,
  });
  if (r.status !== 0)
    throw new Error(`installing ${vsix} failed (exit ${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
}

/**
 * Installs the vsix into an editor's extensions dir. Under scripts/test-e2e.mjs (COA_E2E_INSTALL_CACHE set, a temp
 * dir of that run) code-server's CLI installs each vsix once, into a template there, and every editor of the run gets
 * a copy of it: the CLI costs seconds of CPU and each test file starts its own editor. The template is keyed by the
 * vsix's path, size and mtime, so a vsix packaged again is installed again.
 */
function installVsix(userData: string, extensions: string, vsix = paths.vsix): void {
  const cache = process.env.COA_E2E_INSTALL_CACHE;
  if (!cache) return installWithCli(userData, extensions, vsix);
  if (!existsSync(vsix)) throw new Error(`no vsix at ${vsix}: run node scripts/package-vsix.mjs`);
  const st = statSync(vsix);
  const template = join(
    cache,
    createHash('sha256')
      .update(`${resolve(vsix)}\0${st.size}\0${st.mtimeMs}`)
      .digest('hex')
      .slice(0, 16),
  );
  const from = join(template, 'extensions');
  if (!existsSync(join(template, 'installed'))) {
    rmSync(template, { recursive: true, force: true });
    mkdirSync(from, { recursive: true });
    installWithCli(join(template, 'user-data'), from, vsix);
    writeFileSync(join(template, 'installed'), vsix);
  }
  for (const name of readdirSync(from)) {
    if (name !== 'extensions.json') cpSync(join(from, name), join(extensions, name), { recursive: true });
  }
  // extensions.json names each extension's folder by absolute path: point it at the copy, merged with what an earlier
  // vsix put in this dir.
  const list = (dir: string): unknown[] =>
    existsSync(join(dir, 'extensions.json')) ? JSON.parse(readFileSync(join(dir, 'extensions.json'), 'utf8')) : [];
  const esc = (p: string) => JSON.stringify(p).slice(1, -1);
  const moved = JSON.parse(JSON.stringify(list(from)).split(esc(from)).join(esc(extensions))) as unknown[];
  writeFileSync(join(extensions, 'extensions.json'), JSON.stringify([...list(extensions), ...moved]));
}

async function waitHttp(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`code-server exited with ${child.exitCode} before it was ready`);
    try {
      const res = await fetch(url);
      if (res.status < 500) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`code-server did not answer at ${url} within ${timeoutMs / 1000} s`);
}

function killGroup(child: ChildProcess | undefined, signal: NodeJS.Signals): void {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    /* already gone */
  }
}

const live = new Set<() => Promise<void>>();
// A test process killed by the runner still takes code-server and the browser down with it.
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    void Promise.all([...live].map((c) => c())).finally(() => process.exit(130));
  });
}

export async function startEditor(opts: EditorOptions): Promise<Editor> {
  for (const [what, p] of Object.entries({
    node: paths.node,
    codeServer: paths.codeServer,
    chromium: paths.chromium,
  })) {
    if (!existsSync(p)) throw new Error(`${what} missing at ${p}: run node scripts/setup-e2e.mjs`);
  }
  mkdirSync(artifactsDir, { recursive: true });
  const tmp = mkdtempSync(join(tmpdir(), `coa-e2e-${opts.name}-`));
  const userData = join(tmp, 'user-data');
  const extensions = join(tmp, 'extensions');
  const workspace = join(tmp, 'workspace');
  const profile = join(tmp, 'chromium-profile');
  for (const d of [join(userData, 'User'), extensions, workspace, profile]) mkdirSync(d, { recursive: true });
  const settings = JSON.stringify(
    {
      ...BASE_SETTINGS,
      ...(opts.untrusted ? RESTRICTED_SETTINGS : {}),
      'coaStudio.python': paths.python,
      ...opts.settings,
    },
    null,
    2,
  );
  // code-server is a remote window: machine-scoped settings (coaStudio.python) are read from Machine/, not User/.
  for (const scope of ['User', 'Machine']) {
    mkdirSync(join(userData, scope), { recursive: true });
    writeFileSync(join(userData, scope, 'settings.json'), settings);
  }
  for (const [rel, content] of Object.entries(opts.files ?? {})) {
    mkdirSync(join(workspace, rel, '..'), { recursive: true });
    writeFileSync(join(workspace, rel), content);
  }

  let server: ChildProcess | undefined;
  let context: BrowserContext | undefined;
  let page: Page | undefined;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    live.delete(close);
    if (page) await page.screenshot({ path: join(artifactsDir, `${opts.name}-at-close.png`) }).catch(() => {});
    await context?.close().catch(() => {});
    killGroup(server, 'SIGTERM');
    const exited = server && server.exitCode === null ? new Promise((r) => server!.once('exit', r)) : Promise.resolve();
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    killGroup(server, 'SIGKILL');
    // Keep the editor's logs (extension host, our Output channel) and the runs' event streams for diagnosis.
    const keep = join(artifactsDir, `${opts.name}-logs`);
    rmSync(keep, { recursive: true, force: true });
    try {
      cpSync(join(userData, 'logs'), keep, { recursive: true });
    } catch {
      /* no logs */
    }
    try {
      cpSync(join(workspace, 'runs'), join(keep, 'runs'), {
        recursive: true,
        filter: (src) => !/\.(pt|safetensors|bin)$/.test(src),
      });
    } catch {
      /* no runs */
    }
    rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
  };
  live.add(close);

  try {
    installVsix(userData, extensions);
    for (const extra of opts.extraVsix ?? []) installVsix(userData, extensions, extra);
    const port = await freePort();
    const logFile = join(artifactsDir, `${opts.name}-code-server.log`);
    const log = createWriteStream(logFile);
    // Own process group (detached) so close() can kill the extension host and everything it spawned.
    server = spawn(
      paths.node,
      [
        ...codeServerArgs(userData, extensions, opts.untrusted),
        '--bind-addr',
        `127.0.0.1:${port}`,
        '--reconnection-grace-time',
        '5',
        workspace,
      ],
      {
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, PATH: `${join(paths.node, '..')}:${process.env.PATH}`, VSCODE_IPC_HOOK_CLI: '' },
      },
    );
    server.stdout!.pipe(log);
    server.stderr!.pipe(log);
    const base = `http://127.0.0.1:${port}`;
    await waitHttp(`${base}/healthz`, server, 60_000);

    context = await chromium.launchPersistentContext(profile, {
      executablePath: paths.chromium,
      headless: true,
      viewport: { width: 1600, height: 1000 },
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = context.pages()[0] ?? (await context.newPage());
    traceWebviews(context, page, join(artifactsDir, `${opts.name}-webview.log`));
    const consoleErrors: string[] = [];
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      const t = m.text();
      if (/vsda|marketplace|404|Failed to load resource|gallery|ERR_/.test(t)) return; // workbench noise offline
      consoleErrors.push(t);
    });
    const url = `${base}/?folder=${encodeURIComponent(workspace)}`;
    await page.goto(url);
    await page.locator('.monaco-workbench .part.statusbar').waitFor({ timeout: 120_000 });
    await page
      .locator('.explorer-folders-view, .explorer-viewlet')
      .first()
      .waitFor({ timeout: 120_000 })
      .catch(() => {});
    return {
      page: page!,
      workspace,
      url,
      consoleErrors,
      close,
      logsDir: join(userData, 'logs'),
      shot: async (step) => {
        const file = join(artifactsDir, `${opts.name}-${step}.png`);
        await page!.screenshot({ path: file }).catch(() => {});
        return file;
      },
    };
  } catch (e) {
    await close();
    throw e;
  }
}

// What the webviews' frames and VS Code's webview service worker say, and every webview resource that failed to
// load: the evidence for a page that stays blank (its script never ran). consoleErrors drops "Failed to load
// resource" as workbench noise; here, for webview URLs, it is kept. Also kept per page for webviewFrame's error.
const WEBVIEW_URL = /webview\/browser\/pre\/|vscode-resource|vscode-cdn|service-worker/;
const webviewTraces = new WeakMap<Page, string[]>();

function traceWebviews(context: BrowserContext, page: Page, file: string): void {
  const out = createWriteStream(file);
  const lines: string[] = [];
  webviewTraces.set(page, lines);
  const t0 = Date.now();
  // Workers and delayed host checks can still speak after the page closed: never write to the ended stream.
  let open = true;
  const note = (what: string) => {
    const line = `${((Date.now() - t0) / 1000).toFixed(1).padStart(7)} s ${what}`;
    lines.push(line);
    if (lines.length > 200) lines.shift();
    if (open) out.write(`${line}\n`);
  };
  page.on('console', (m) => {
    const where = m.location().url;
    if (WEBVIEW_URL.test(where) || /webview|service ?worker|load-resource/i.test(m.text()))
      note(`console.${m.type()} [${where}] ${m.text()}`);
  });
  page.on('pageerror', (e) => note(`pageerror ${e.message.split('\n')[0]}`));
  page.on('requestfailed', (r) => {
    if (WEBVIEW_URL.test(r.url())) note(`requestfailed ${r.url()} ${r.failure()?.errorText ?? ''}`);
  });
  page.on('response', (r) => {
    if (WEBVIEW_URL.test(r.url()) && (r.status() >= 400 || /\.js(\?|$)/.test(r.url())))
      note(`response ${r.status()}${r.fromServiceWorker() ? ' (service worker)' : ''} ${r.url()}`);
  });
  page.on('frameattached', (f) => {
    if (WEBVIEW_URL.test(f.url()) || f.name() === 'active-frame') note(`frame attached ${f.name()} ${f.url()}`);
  });
  page.on('framenavigated', (f) => {
    if (!WEBVIEW_URL.test(f.url())) return;
    note(`frame navigated ${f.name()} ${f.url()}`);
    // Which service worker ended up controlling a webview host: VS Code's webview worker (service-worker.js) serves
    // its resources; code-server's own (serviceWorker.js) answers none of them.
    if (/pre\/index\.html/.test(f.url())) {
      setTimeout(
        () =>
          void f
            .evaluate(() => navigator.serviceWorker?.controller?.scriptURL ?? 'none')
            .then(
              (u) =>
                note(
                  `webview host ${new URL(f.url()).searchParams.get('id')} controlled by ${u.replace(/^.*\/|\?.*$/g, '')}`,
                ),
              () => {},
            ),
        3000,
      );
    }
  });
  const worker = (w: {
    url(): string;
    on(e: 'console', l: (m: { type(): string; text(): string }) => void): unknown;
  }) => {
    note(`service worker ${w.url()}`);
    w.on('console', (m) => note(`service worker console.${m.type()} ${m.text()}`));
  };
  context.serviceWorkers().forEach(worker);
  context.on('serviceworker', worker);
  page.once('close', () => {
    open = false;
    out.end();
  });
}

/** Files of the repository as a files map (for EditorOptions.files), keyed by their base name. */
export function repoFiles(...rel: string[]): Record<string, string> {
  return Object.fromEntries(rel.map((r) => [r.split('/').pop()!, readFileSync(join(repoRoot, r), 'utf8')]));
}

// ---- waiting on conditions ----

/** How often `until` looks again: short, as it only reads state (no fixed sleep stands in for a condition). */
const POLL_MS = 100;

/**
 * Waits for a state no element or event announces (a file the trainer writes, a count in the status bar): `probe`
 * is asked every POLL_MS until it returns something truthy, which is returned. Throws, naming `what`, at the
 * deadline. Elements are waited for with Playwright's own `locator.waitFor` / `waitForFunction` instead.
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

// ---- workbench helpers ----

/**
 * Runs a command through the command palette (F1), by its title as shown there ("CoA: Train Stage"). Commands
 * whose enablement key is not set yet (extension still activating) are not listed: retry until they are.
 */
export async function runCommand(page: Page, title: string, timeout = 90_000): Promise<void> {
  const deadline = Date.now() + timeout;
  for (let attempt = 0; ; attempt++) {
    await page.keyboard.press('Escape');
    // Focus can sit inside a webview (a live panel a previous step opened) or a notification, where F1 may not
    // reach the workbench: from the second attempt on, give the status bar focus first.
    if (attempt > 0)
      await page
        .locator('.part.statusbar')
        .click({ position: { x: 5, y: 5 } })
        .catch(() => {});
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    const opened = await input.waitFor({ state: 'visible', timeout: 10_000 }).then(
      () => true,
      () => false,
    );
    if (!opened) {
      if (Date.now() > deadline)
        throw new Error(`the command palette did not open for "${title}" within ${timeout / 1000} s`);
      continue;
    }
    // The palette can close under the pointer (a notification toast taking focus as it appears): then ask again.
    const filled = await input.fill(`>${title}`, { timeout: 10_000 }).then(
      () => true,
      () => false,
    );
    if (!filled) {
      if (Date.now() > deadline)
        throw new Error(`the command palette closed before "${title}" could be typed, for ${timeout / 1000} s`);
      continue;
    }
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
    const found = await row.waitFor({ timeout: 5_000 }).then(
      () => true,
      () => false,
    );
    if (found) return row.click();
    if (Date.now() > deadline)
      throw new Error(`command "${title}" not in the command palette after ${timeout / 1000} s`);
    // Not listed within 5 s: the extension is still activating (its enablement key unset). Ask again.
    await page.keyboard.press('Escape');
  }
}

/**
 * Picks an item in the open quick pick by (part of) its label. `title`: wait for the quick pick with this title
 * first, so a step of a multi-step pick never clicks a row of the previous step's list.
 */
export async function pickQuick(page: Page, label: string | RegExp, title?: string, timeout = 60_000): Promise<void> {
  if (title)
    await page
      .locator('.quick-input-widget .quick-input-title', { hasText: title })
      .waitFor({ state: 'visible', timeout });
  const row = page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: label }).first();
  await row.waitFor({ state: 'visible', timeout });
  await row.click();
  // A click during the list's re-render can be lost: accept with Enter if this pick is still open once the click
  // has had its chance to close it.
  const pick = title ? page.locator('.quick-input-widget .quick-input-title', { hasText: title }) : row;
  const closed = await pick.waitFor({ state: 'hidden', timeout: 2000 }).then(
    () => true,
    () => false,
  );
  if (!closed && (await row.isVisible())) {
    await row.hover();
    await page.keyboard.press('Enter');
  }
}

/** Opens a workspace file through Quick Open and waits for its editor tab (retried: the file search may not list a
 * just-written file yet, and the list may still show the previous, unfiltered items when the row is clicked). */
export async function openFile(page: Page, name: string, attempts = 3): Promise<void> {
  const tab = page.locator('.tabs-container .tab.active', { hasText: name });
  for (let i = 1; ; i++) {
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: 30_000 });
    await input.fill(name);
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first();
    // A file written after the workspace opened may be missing from the first file search: ask again.
    const listed = await row.waitFor({ timeout: i < attempts ? 20_000 : 60_000 }).then(
      () => true,
      () => false,
    );
    if (!listed) {
      if (i >= attempts) throw new Error(`Quick Open never listed ${name} (${attempts} attempts)`);
      continue;
    }
    // The list may still show the previous, unfiltered items: click once the filtered list has the file focused.
    await page
      .locator('.quick-input-list .monaco-list-row.focused', { hasText: name })
      .waitFor({ timeout: 10_000 })
      .catch(() => undefined);
    await row.click();
    const opened = await tab.waitFor({ timeout: i < attempts ? 15_000 : 60_000 }).then(
      () => true,
      () => false,
    );
    if (opened) return;
    if (i >= attempts) throw new Error(`Quick Open did not open ${name} (${attempts} attempts)`);
  }
}

/** The status-bar language of the active editor (a file first opens as Plain Text until the extension is up). */
export async function waitLanguage(page: Page, language: string, timeout = 90_000): Promise<void> {
  await page.locator('[id="status.editor.mode"]', { hasText: language }).waitFor({ timeout });
}

/** The document inside a webview (panel or notebook renderer): the iframe's inner active frame. */
export async function webviewFrame(
  page: Page,
  match: (f: Frame) => Promise<boolean>,
  timeout = 90_000,
): Promise<Frame> {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    for (const f of page.frames()) {
      if (f.name() !== 'active-frame' && !/fake\.html|index\.html/.test(f.url())) continue;
      try {
        if (await match(f)) return f;
      } catch {
        /* frame navigating */
      }
    }
    await page.waitForTimeout(500);
  }
  const trace = (webviewTraces.get(page) ?? []).slice(-25).join('\n    ');
  throw new Error(
    `no webview frame matched within ${timeout / 1000} s (frames: ${page
      .frames()
      .map((f) => f.url())
      .join(
        ', ',
      )}; webview hosts: ${await webviewHostStates(page)})\n  webview trace (last 25):\n    ${trace || 'nothing'}`,
  );
}

/** What each webview host frame (VS Code's pre/index.html) holds: whether a service worker controls it and whether
 * its content frame exists. Seen once: a host frame without a content frame for 180 s, no error. */
async function webviewHostStates(page: Page): Promise<string> {
  const hosts = page.frames().filter((f) => /webview\/browser\/pre\/index\.html/.test(f.url()));
  const states = await Promise.all(
    hosts.map((f) =>
      f
        .evaluate(() =>
          JSON.stringify({
            controlled: navigator.serviceWorker?.controller?.scriptURL.replace(/^.*\/|\?.*$/g, '') ?? false,
            active: Boolean(document.getElementById('active-frame')),
            pending: Boolean(document.getElementById('pending-frame')),
          }),
        )
        .catch((e: Error) => `unreadable: ${e.message.split('\n')[0]}`),
    ),
  );
  const contents = page.frames().filter((f) => /webview\/browser\/pre\/fake\.html/.test(f.url()));
  const inside = await Promise.all(
    contents.map((f) =>
      f
        .evaluate(() =>
          JSON.stringify({
            readyState: document.readyState,
            controller: navigator.serviceWorker?.controller?.scriptURL.replace(/^.*\/|\?.*$/g, '') ?? null,
            scripts: document.scripts.length,
            text: (document.body?.innerText ?? '').slice(0, 300),
          }),
        )
        .catch((e: Error) => `unreadable: ${e.message.split('\n')[0]}`),
    ),
  );
  return `${states.join(', ') || 'none'}; content frames: ${inside.join(', ') || 'none'}`;
}
