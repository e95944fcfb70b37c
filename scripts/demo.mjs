// `npm run demo [-- --config C --run-dir runs/<id> --resume --stages a,b --seeds N --split dev|test]`: the whole AutoCoA recipe on the embedded
// default — pretrain → SFT-1 → SFT-2 → SFT-3 → RL-1 → RL-2 and RL-2 with OTC-GRPO, the environment server started
// and stopped by the pipeline (`python -m coa_trainer pipeline`), progress rendered from the JSON events the
// trainer echoes, then the results table (test split). Ctrl-C asks the pipeline to checkpoint and stop; run again
// with --resume --run-dir <the same run> to continue. The trajectory-core demo is `npm run demo:core`.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join, relative, resolve } from 'node:path';
import { duration, ProgressRenderer } from './demo-progress.mjs';
import { spreadVerdict } from './demo-verdict.mjs';

const root = join(import.meta.dirname, '..');
const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
const config = resolve(root, opt('--config', 'examples/embedded-demo.run.json'));
const runDir = resolve(root, opt('--run-dir', join('runs', `demo-${stamp}`)));
const python =
  process.env.COA_PYTHON || join(root, process.platform === 'win32' ? '.venv/Scripts/python.exe' : '.venv/bin/python');

for (const [path, hint] of [
  [join(root, 'dist/cli.js'), 'run `npm run build` (the environment server is dist/cli.js)'],
  [python, 'run `npm install` (it creates .venv) or set COA_PYTHON'],
  [config, 'pass --config <run.json>'],
]) {
  if (!existsSync(path)) {
    console.error(`demo: ${path} is missing — ${hint}.`);
    process.exit(1);
  }
}

const argv = ['-m', 'coa_trainer', 'pipeline', '--config', config, '--run-dir', runDir];
if (args.includes('--resume')) argv.push('--resume');
if (opt('--stages')) argv.push('--stages', opt('--stages'));
// --seeds N: the whole pipeline per seed, then mean ± sd over seeds (N × the time of one); --split dev: choose settings
if (opt('--seeds')) argv.push('--seeds', opt('--seeds'));
if (opt('--split')) argv.push('--split', opt('--split'));
console.log(`demo: ${relative(root, config)} → ${relative(root, runDir)}`);
const started = Date.now();
// Own process group: a terminal Ctrl-C reaches only this script, which asks the pipeline to stop cleanly.
const child = spawn(python, argv, {
  cwd: root,
  detached: true,
  stdio: ['ignore', 'pipe', 'inherit'],
  // OMP_WAIT_POLICY=PASSIVE unless set: with 2 torch threads (a config's `threads`) on a busy 2-core machine, spinning
  // OpenMP threads made torch ~15× slower than sleeping ones (bench/fidelity/run.py); scheduling only, same numbers
  env: { OMP_WAIT_POLICY: 'PASSIVE', ...process.env, PYTHONPATH: join(root, 'src', 'trainer'), PYTHONUNBUFFERED: '1' },
});
let interrupts = 0;
process.on('SIGINT', () => {
  interrupts++;
  console.log(interrupts === 1 ? '\ndemo: stopping (the running stage checkpoints; Ctrl-C again to kill)' : '');
  child.kill(interrupts === 1 ? 'SIGTERM' : 'SIGKILL');
});
process.on('SIGTERM', () => child.kill('SIGTERM'));

const tty = process.stdout.isTTY;
const renderer = new ProgressRenderer();
let live = false;
const clearLive = () => {
  if (live) process.stdout.write('\r\x1b[2K');
  live = false;
};
createInterface({ input: child.stdout }).on('line', (line) => {
  let ev;
  try {
    ev = JSON.parse(line);
  } catch {
    clearLive();
    console.log(line); // not an event: show it as is
    return;
  }
  const out = renderer.render(ev);
  if (out.lines.length) {
    clearLive();
    for (const l of out.lines) console.log(l);
  } else if (tty && out.live) {
    clearLive(); // a TTY shows every progress event on one line rewritten in place
    process.stdout.write(out.live.slice(0, (process.stdout.columns || 120) - 1));
    live = true;
  }
});

child.on('close', (code, signal) => {
  clearLive();
  const took = duration((Date.now() - started) / 1000);
  const results = join(runDir, 'results.md');
  if (code === 0 && existsSync(results)) {
    console.log(
      `\n${readFileSync(results, 'utf8')
        .replace(/^# .*\n/, '')
        .trim()}\n`,
    );
    // one run is one draw: read its verdict against the spread bench/fidelity measured over seeds × thread counts
    const spreadFile = join(root, 'bench', 'fidelity', 'spread.json');
    const spread = existsSync(spreadFile) ? JSON.parse(readFileSync(spreadFile, 'utf8')) : null;
    const doc = JSON.parse(readFileSync(join(runDir, 'results.json'), 'utf8'));
    console.log(`${spreadVerdict(doc, spread, relative(root, config)).join('\n')}\n`);
  }
  const where = relative(root, runDir);
  const status =
    code === 0
      ? 'done'
      : code === 130
        ? 'stopped (resume with --resume --run-dir ' + where + ')'
        : `failed (exit ${code ?? signal})`;
  console.log(`demo: ${status} in ${took} — run in ${where}/ (events.jsonl, stages/, results.md, results.json)`);
  process.exit(code ?? 1);
});
