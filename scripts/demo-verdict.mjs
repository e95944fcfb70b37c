// The demo's verdict read against the known variance: each claim's measure in this run (results.json `claims`,
// computed and formatted by the trainer's evaluation/claims.py) next to the spread bench/fidelity measured over
// seeds × thread counts (bench/fidelity/spread.json, formatted by the same module), e.g. "OTC-GRPO closes ≥ 50% of
// the over-calling gap: on 9/10 runs, closed 70 ± 15%; this run: 64%". A single run is one draw from that spread.

/**
 * Lines for the terminal: why there is nothing to compare (another config or split than bench/fidelity measured, a
 * results.json without claims), or one line per claim with its spread and this run's value and whether it holds;
 * nothing for a run of several seeds (its own table is already over seeds).
 * `configRel`: the run's config relative to the repository root.
 */
export function spreadVerdict(results, spread, configRel) {
  if (results.per_seed) return []; // several seeds: the table above already says how each claim spreads over them
  if (!spread) return ['(no bench/fidelity spread to read this run against: run bench/fidelity/run.py --write)'];
  const head = `Against the spread bench/fidelity measured (${spread.runs} runs: ${spread.seeds} seeds × ${spread.threads.length} thread counts (${spread.threads.join(', ')}), ${spread.split} split, ${spread.date}, commit ${spread.commit}; ${spread.machine}):`;
  if (spread.config !== configRel)
    return [`(bench/fidelity measured ${spread.config}, not ${configRel}: no spread to read this run against)`];
  if (results.split !== spread.split)
    return [
      `(bench/fidelity measured the ${spread.split} split, this run the ${results.split} split: no spread to read it against)`,
    ];
  if (!results.claims) return ['(this results.json has no per-claim values to set against the spread)'];
  const lines = [head];
  for (const c of spread.claims) {
    if (!c.runs) continue;
    const mine = results.claims[c.id] ?? { holds: null };
    const verdict = mine.holds === null ? '' : mine.holds ? ' (holds)' : ' (does NOT hold)';
    const shown = mine.shown ?? '—';
    lines.push(
      `- ${c.text[0].toUpperCase()}${c.text.slice(1)}: on ${c.holds}/${c.runs} runs, ${c.measure} ${c.spread}; this run: ${shown}${verdict}.`,
    );
  }
  return lines;
}
