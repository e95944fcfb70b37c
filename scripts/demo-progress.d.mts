// Types of demo-progress.mjs for the TypeScript tests (the script itself runs under plain node).
export declare function duration(s: number | null | undefined): string;
export declare class ProgressRenderer {
  render(ev: Record<string, unknown> & { type: string }): { lines: string[]; live?: string };
}
