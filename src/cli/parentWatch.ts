// `coa env serve --parent-pid P`: the server stops itself once its parent has gone — even a parent killed with
// SIGKILL, which could not stop it. The docs promise about a second, and a 1 s poll followed by two idle checks 2 s
// apart stopped it 4–5.6 s after the parent's death; so the parent is checked every PARENT_POLL_MS and the server
// stops at once when nothing is using it: no request in flight and no client connection open (a killed process's
// connections close with it) — or, with a connection open, none of its requests for QUIET_MS: a killed
// pipeline's stage, still connected, finishes its step and saves its OTC state first. Never later than MAX_WAIT_MS.

import { readFileSync } from 'node:fs';

export const PARENT_POLL_MS = 200;
export const QUIET_MS = 2_000;
export const MAX_WAIT_MS = 60_000;

export interface ServerActivity {
  inFlight: number;
  connections: number;
  /** When the last request started or ended (ms since the epoch). */
  lastRequestAt: number;
}

/** Whether a server whose parent went at `goneAt` may stop now. */
export function mayStop(a: ServerActivity, now: number, goneAt: number): boolean {
  if (now - goneAt >= MAX_WAIT_MS) return true;
  if (a.inFlight > 0) return false;
  return a.connections === 0 || now - a.lastRequestAt >= QUIET_MS;
}

/**
 * Whether process `pid` still runs: signal 0 checks without sending (EPERM: it exists, as another user); a zombie
 * (exited, not reaped yet) has gone (Linux: /proc/<pid>/status; elsewhere the signal's answer stands).
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/**
 * Polls for the parent's exit (a dead parent nobody has reaped still answers kill(pid, 0), but our own ppid changes
 * when it exits) and calls `onGone` once. unref'd: the watch never keeps the process up.
 */
export function watchParent(pid: number, onGone: () => void, alive: (pid: number) => boolean = isAlive): () => void {
  const ppid0 = process.ppid;
  const gone = () => !alive(pid) || (pid === ppid0 && process.ppid !== ppid0);
  let done = false;
  const check = () => {
    if (done || !gone()) return;
    done = true;
    clearInterval(timer);
    onGone();
  };
  const timer = setInterval(check, PARENT_POLL_MS);
  timer.unref();
  check();
  return () => {
    done = true;
    clearInterval(timer);
  };
}

/** Resolves once the server may stop after its parent's exit (polled every PARENT_POLL_MS). */
export function whenIdle(activity: () => ServerActivity, now: () => number = Date.now): Promise<void> {
  const goneAt = now();
  return new Promise((resolve) => {
    const check = () => {
      if (!mayStop(activity(), now(), goneAt)) return false;
      clearInterval(timer);
      resolve();
      return true;
    };
    const timer = setInterval(check, PARENT_POLL_MS);
    check();
  });
}
