// What the "Compare runs" page (webview/compare) is given by the host (src/extension/providers/compare): its whole
// state, embedded in the page (#initial-state). There are no messages either way.
import type { CompareModel } from '../extension/providers/compare/model';

/**
 * Every question with all its samples (`all`), the per-step table and the default window: the page computes the
 * rows and the summary of whichever window is chosen (compare/aggregate.ts), so the rows are not embedded twice.
 */
export type ComparePageState = Omit<CompareModel, 'rows' | 'summary'> & { truncatedRows: number };
