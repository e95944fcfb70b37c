// A page whose script never runs is a blank panel with no error anywhere. Our pages post `{ type: 'ready' }` once
// they have drawn from their embedded state; until a message arrives, the HTML is set again, freshly rendered (a new
// nonce), a bounded number of times, then the caller is told it gave up. The one cause seen (code-server: a webview
// host left under code-server's own service worker, so its script load hung) is not cured by new HTML in the same
// host: html.ts inlines scripts for it. This stays as the bounded safety net for whatever else stops a page.
import type * as vscode from 'vscode';

/** The part of a vscode.Webview the watchdog uses (so it is testable without VS Code). */
export type ReadyWebview = Pick<vscode.Webview, 'onDidReceiveMessage'> & { html: string };

export interface ReadyWatchdogOptions {
  /** How long a page gets to post `ready` before its HTML is set again. */
  timeoutMs?: number;
  /** How many times the HTML is set again at most. */
  retries?: number;
  /** Told of each re-render and of the final give-up, for the log. */
  onStall?: (attempt: number, gaveUp: boolean) => void;
}

export const READY_TIMEOUT_MS = 10_000;
export const READY_RETRIES = 3;

/**
 * Sets `webview.html = render()` and re-sets it while no `ready` message comes. Returns a disposable that stops the
 * watchdog (dispose it with the panel). `render` is called for each attempt so every attempt has a fresh nonce.
 */
export function renderUntilReady(
  webview: ReadyWebview,
  render: () => string,
  options: ReadyWatchdogOptions = {},
): { dispose(): void } {
  const timeoutMs = options.timeoutMs ?? READY_TIMEOUT_MS;
  const retries = options.retries ?? READY_RETRIES;
  let attempt = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    timer = setTimeout(() => {
      if (attempt >= retries) {
        timer = undefined;
        options.onStall?.(attempt, true);
        return;
      }
      attempt++;
      options.onStall?.(attempt, false);
      webview.html = render();
      arm();
    }, timeoutMs);
    // A waiting page must not keep the extension host (or a test process) alive.
    timer.unref?.();
  };
  // Any message proves the script runs (a `ready` lost on the way must not cost the user a drawn page).
  const listener = webview.onDidReceiveMessage(() => {
    if (timer) clearTimeout(timer);
    timer = undefined;
  });
  webview.html = render();
  arm();
  return {
    dispose() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      listener.dispose();
    },
  };
}
