// The search boundary meter's classes in words (no zod, so a webview page imports them without the schema library);
// the report's schema is ./boundary.ts.

/** Each question's class, from the checkpoint's own rollouts with search refused and with search allowed. */
export const BOUNDARY_CLASSES = {
  'no-search': 'right with search refused, and did not search',
  'over-search': 'right with search refused, searched anyway',
  'needed-search': 'wrong with search refused, right with search',
  'under-search': 'wrong both ways, right with one more search where it answered',
  unreachable: 'wrong both ways and with one more search',
} as const;
export type BoundaryClass = keyof typeof BOUNDARY_CLASSES;
export const BOUNDARY_CLASS_NAMES = Object.keys(BOUNDARY_CLASSES) as [BoundaryClass, ...BoundaryClass[]];
