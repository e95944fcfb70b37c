// What the Search Boundary page (webview/boundary) is given by the host (src/extension/providers/boundary): its whole
// state, embedded in the page (#initial-state). There are no messages either way.
import type { BoundaryReport } from '../core/boundary';

export interface BoundaryPageState {
  /** The report file, as the workspace names it. */
  file: string;
  /** The report, with long responses cut and rows capped (see `cutRows`, `responseChars`; providers/boundary/report.ts). */
  report: BoundaryReport;
  /** Rows left out past the cap (0: every question is in `report.rows`). */
  cutRows: number;
  /** Characters a response keeps before it is cut. */
  responseChars: number;
}
