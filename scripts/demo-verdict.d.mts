// Types of demo-verdict.mjs for the TypeScript tests (the script itself runs under plain node).
export interface SpreadClaim {
  id: string;
  text: string;
  measure: string;
  holds: number;
  runs: number;
  spread: string;
}
export interface Spread {
  date: string;
  commit: string;
  machine: string;
  config: string;
  split: string;
  seeds: number;
  threads: number[];
  runs: number;
  claims: SpreadClaim[];
}
export interface RunClaim {
  value: number | null;
  holds: boolean | null;
  shown: string;
}
export declare function spreadVerdict(
  results: { split: string; claims?: Record<string, RunClaim>; per_seed?: unknown[] },
  spread: Spread | null,
  configRel: string,
): string[];
