// Shared by the real-editor benches (bench/live-panel/editor.ts, bench/notebook/huge.ts): waiting, inside a record
// view's own webview frame, for what it draws — polled every 10 ms there, so a figure is the editor's and not the
// harness's frame scan (webviewFrame looks every 500 ms).
import type { Frame } from 'playwright-core';

/** Resolves once the frame shows the record's header (an h3 holding `id`) and an element matching `selector`. */
export function recordViewDrawn(frame: Frame, id: string, selector: string, timeout = 120_000): Promise<unknown> {
  return frame.waitForFunction(
    ([sel, want]) => {
      // Markdown cells are drawn in shadow roots (outputs are not): the query walks into them. No inner named
      // functions: the bundler's keepNames helper does not exist in the page.
      const roots: (Document | ShadowRoot)[] = [document];
      let header = false;
      let found = false;
      while (roots.length) {
        const root = roots.pop()!;
        header ||= Array.from(root.querySelectorAll('h3')).some((e) => e.textContent?.includes(want));
        found ||= root.querySelector(sel) !== null;
        for (const e of Array.from(root.querySelectorAll('*'))) if (e.shadowRoot) roots.push(e.shadowRoot);
      }
      return header && found;
    },
    [selector, id] as const,
    { polling: 10, timeout },
  );
}

/** Is this frame a webview's content frame (VS Code's fake.html inside a webview host)? */
export const isWebviewContent = (f: Frame) => /pre\/fake\.html/.test(f.url());
