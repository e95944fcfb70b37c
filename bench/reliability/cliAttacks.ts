// The command line and the config readers under the reliability attacks, on any checkout's built CLI (`root`/bin/coa.js)
// and trainer (`root`/src/trainer with its .venv): a reader that closes the pipe (`| head -c10`), output onto a full
// disk, a loop of symbolic links as the output, and the config files that broke `coa data check` or the trainer (100k
// levels of nesting, a BOM, invalid UTF-8, `lr` 1e999 / 1e300, a model shape that cannot be built).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync, closeSync } from 'node:fs';
import { join } from 'node:path';

export interface Row {
  attack: string;
  held: boolean;
  figures: string;
}

const STACK = /internal error|\n\s+at |RangeError|Traceback|node:internal/;
const oneLine = (s: string) => s.trim().split('\n').filter(Boolean);
const short = (s: string, n = 110) => (s.length > n ? `${s.slice(0, n)}…` : s);

function coa(root: string, args: string[], stdout: 'pipe' | number = 'pipe') {
  const r = spawnSync(process.execPath, [join(root, 'bin/coa.js'), ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
    stdio: ['ignore', stdout, 'pipe'],
    maxBuffer: 1 << 26,
  });
  return { code: r.status, out: r.stdout ?? '', err: r.stderr ?? '' };
}

/** `coa validate f f f | head -c10`, `coa stats f > /dev/full`, `coa score f -o loop1`. */
export async function cliAttacks(root: string, work: string): Promise<Row[]> {
  mkdirSync(work, { recursive: true });
  const example = readFileSync(join(root, 'examples/trajectories.coa.jsonl'), 'utf8');
  const big = join(work, 'big.jsonl');
  writeFileSync(big, example.repeat(400));
  const rows: Row[] = [];

  const child = spawn(process.execPath, [join(root, 'bin/coa.js'), 'validate', big, big, big, '--strict'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d));
  await new Promise((r) => child.stdout.once('data', r));
  child.stdout.destroy(); // as head -c10 does
  const code = await new Promise<number | null>((r) => child.once('close', r));
  rows.push({
    attack: '`coa validate f f f | head -c10`',
    held: err === '',
    figures: `exit ${code}; stderr ${err ? `${oneLine(err).length} lines${STACK.test(err) ? ' (a stack trace)' : ''}: ${short(oneLine(err)[0])}` : 'empty'}`,
  });

  const full = openSync('/dev/full', 'w');
  const s = coa(root, ['stats', join(root, 'examples/trajectories.coa.jsonl')], full);
  closeSync(full);
  rows.push({
    attack: '`coa stats f > /dev/full`',
    held: s.code !== 0 && oneLine(s.err).length === 1 && !STACK.test(s.err),
    figures: `exit ${s.code}; stderr: ${s.err ? short(oneLine(s.err).join(' / ')) : 'empty (the output was lost)'}`,
  });

  const a = join(work, 'loop1');
  const b = join(work, 'loop2');
  rmSync(a, { force: true });
  rmSync(b, { force: true });
  symlinkSync(b, a);
  symlinkSync(a, b);
  const l = coa(root, ['score', join(root, 'examples/trajectories.coa.jsonl'), '-o', a]);
  rows.push({
    attack: '`coa score f -o loop1` (a loop of symbolic links)',
    held: l.code === 2 && oneLine(l.err).length === 1 && !STACK.test(l.err),
    figures: `exit ${l.code}; ${oneLine(l.err).length} stderr lines: ${short(oneLine(l.err)[0] ?? '', 90).replace(work + '/', '')}`,
  });
  return rows;
}

/** The trainer's config loader on files (test/fuzz/load_configs.py): one verdict per file. */
function trainerVerdicts(root: string, files: string[]): { verdict: string; message: string | null }[] {
  const py = spawnSync(join(root, '.venv/bin/python'), [join(__dirname, '../../test/fuzz/load_configs.py'), ...files], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: join(root, 'src/trainer') },
    maxBuffer: 1 << 26,
  });
  return py.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** Config files through `coa data check` and the trainer's loader: each refused cleanly where it must be (or accepted), and alike. */
export function configAttacks(root: string, work: string): Row[] {
  mkdirSync(work, { recursive: true });
  const cases: { attack: string; file: string; bytes: Buffer; accept: boolean }[] = [
    {
      attack: 'a config nested 100,000 levels deep',
      file: 'deep.json',
      bytes: Buffer.from(`{"name": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`),
      accept: false,
    },
    {
      attack: 'a config saved with a byte order mark',
      file: 'bom.json',
      bytes: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"seed": 1}')]),
      accept: true,
    },
    {
      attack: 'a config with invalid UTF-8',
      file: 'utf8.json',
      bytes: Buffer.from([...Buffer.from('{"name": "caf'), 0xe9, ...Buffer.from('"}')]),
      accept: false,
    },
    {
      attack: '`hidden_size` 63 with 4 heads',
      file: 'shape.json',
      bytes: Buffer.from('{"model": {"embedded": {"hidden_size": 63, "num_heads": 4}}}'),
      accept: false,
    },
    {
      attack: '`"lr": 1e999`',
      file: 'inf.json',
      bytes: Buffer.from('{"stages": {"pretrain": {"lr": 1e999}}}'),
      accept: false,
    },
    {
      attack: '`"lr": 1e300`',
      file: 'big.json',
      bytes: Buffer.from('{"stages": {"pretrain": {"lr": 1e300}}}'),
      accept: false,
    },
  ];
  const files = cases.map((c) => {
    const f = join(work, c.file);
    writeFileSync(f, c.bytes);
    return f;
  });
  const trainer = trainerVerdicts(root, files);
  return cases.map((c, i) => {
    const d = coa(root, ['data', 'check', files[i]]);
    const core = d.code === 0 ? 'ok' : STACK.test(d.err) ? 'internal' : 'refused';
    const t = trainer[i]?.verdict ?? 'no answer';
    const tr = t === 'error' ? 'refused' : t;
    const want = c.accept ? 'ok' : 'refused';
    const where = (text: string) => /:(\d+):(\d+):/.exec(text)?.slice(1).join(':');
    const coreSaid =
      core === 'refused'
        ? ` (${where(d.err) ? `at ${where(d.err)}: ` : ''}${short(oneLine(d.err)[0].replace(/^.*?error: /, ''), 60)})`
        : core === 'internal'
          ? ` (${short(oneLine(d.err)[0], 60)})`
          : '';
    const trSaid =
      tr === 'refused'
        ? ` (${short((trainer[i].message ?? '').replace(/^invalid run config:\n/, '').replace(/^[^ ]*\.json:? ?/, ''), 60)})`
        : tr === 'internal'
          ? ` (${short((trainer[i].message ?? '').trim().split('\n').at(-1) ?? '', 60)})`
          : '';
    return {
      attack: c.attack,
      held: core === want && tr === want,
      figures: `coa data check: ${core}${coreSaid}; trainer: ${tr}${trSaid}`,
    };
  });
}
