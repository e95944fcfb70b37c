// Turns how a child process ended (spawn error, exit code, signal, last stderr lines) into one message a user can
// act on: what happened, the likely fix, and the tail of the log. Pure, so every branch is unit-tested.

export interface ExitInfo {
  /** What was run, for the message ("trainer", "environment server"). */
  what: string;
  /** The executable (shown when it cannot be started). */
  command: string;
  /** Error from spawn itself (ENOENT, EACCES), if the process never started. */
  spawnError?: NodeJS.ErrnoException;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when we asked it to stop (cancel): SIGTERM/130/143 are then the expected outcome. */
  cancelled: boolean;
  stderrTail: string[];
}

export type ExitStatus = 'ok' | 'cancelled' | 'failed';

export type FailureKind = 'python-missing' | 'torch-missing' | 'trainer-missing' | 'port-in-use' | 'crash' | 'killed';

export interface Diagnosis {
  status: ExitStatus;
  kind?: FailureKind;
  /** One or two sentences: what happened and what to do. Empty for ok/cancelled. */
  message: string;
}

const TAIL_LINES = 8;

export function tailText(lines: string[], n = TAIL_LINES): string {
  const tail = lines.filter((l) => l.trim()).slice(-n);
  return tail.length ? `\nLast output:\n${tail.join('\n')}` : '';
}

export function diagnoseExit(info: ExitInfo): Diagnosis {
  const text = info.stderrTail.join('\n');
  if (info.spawnError) {
    const e = info.spawnError;
    if (e.code === 'ENOENT' || e.code === 'EACCES') {
      return {
        status: 'failed',
        kind: 'python-missing',
        message:
          `Cannot start the ${info.what}: "${info.command}" ${e.code === 'ENOENT' ? 'was not found' : 'is not executable'}. ` +
          'Set "coaStudio.python" to a Python 3.10+ interpreter with the trainer\'s requirements ' +
          '(pip install -r src/trainer/requirements.txt), or run `npm install` in the CoA Studio checkout to create .venv.',
      };
    }
    return {
      status: 'failed',
      kind: 'crash',
      message: `Cannot start the ${info.what} (${info.command}): ${e.message}`,
    };
  }
  if (info.code === 0 && !info.signal) return { status: 'ok', message: '' };
  // A cancelled trainer checkpoints and exits 130; a process that died of our SIGTERM is cancelled too.
  if (
    info.cancelled &&
    (info.signal === 'SIGTERM' || info.signal === 'SIGKILL' || info.code === 130 || info.code === 143)
  ) {
    return { status: 'cancelled', message: '' };
  }
  const tail = tailText(info.stderrTail);
  const missing = /No module named '([\w.]+)'/.exec(text);
  if (missing && /^(torch|transformers|tokenizers|peft|safetensors|numpy|jsonschema)\b/.test(missing[1])) {
    return {
      status: 'failed',
      kind: 'torch-missing',
      message:
        `The ${info.what} needs the Python package "${missing[1]}", which "${info.command}" does not have. ` +
        'Install the trainer requirements into that interpreter (pip install -r src/trainer/requirements.txt) ' +
        'or point "coaStudio.python" at one that has them.' +
        tail,
    };
  }
  if (missing && missing[1].startsWith('coa_trainer')) {
    return {
      status: 'failed',
      kind: 'trainer-missing',
      message:
        `"${info.command}" cannot import the CoA trainer (coa_trainer). Use the CoA Studio .venv ` +
        '(npm install creates it) or pip install -e src/trainer into your interpreter.' +
        tail,
    };
  }
  if (/EADDRINUSE|port in use|address already in use/i.test(text)) {
    return {
      status: 'failed',
      kind: 'port-in-use',
      message:
        `The ${info.what} could not listen: the port is in use. Stop the other server or choose another port ` +
        '(CoA Studio uses a free port when the port is 0).' +
        tail,
    };
  }
  if (info.signal) {
    return {
      status: 'failed',
      kind: 'killed',
      message:
        `The ${info.what} was killed by ${info.signal}` +
        (info.signal === 'SIGKILL' ? ' (out of memory? try a smaller batch_size or max_len).' : '.') +
        tail,
    };
  }
  return {
    status: 'failed',
    kind: 'crash',
    message:
      `The ${info.what} exited with code ${info.code}. See the CoA Studio log for details; fix the cause shown ` +
      'below and use "CoA: Resume Run" to continue from the last checkpoint.' +
      tail,
  };
}
