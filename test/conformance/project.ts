// The language-neutral shape a format report takes in test/conformance/format.json (shared by the TypeScript
// conformance test and the developer script that proposes new vectors).
import type { FormatReport } from '../../src/core/rules';

export function formatVector(r: FormatReport) {
  return {
    dialect: r.dialect,
    format_ok: r.formatOk,
    tool_calls: r.toolCalls,
    answer: r.answer,
    segments: r.segments.map((s) => [s.kind, s.start, s.end, ...(s.tool !== undefined ? [s.tool] : [])]),
    diagnostics: r.diagnostics.map((d) => [d.code, d.start, d.end]),
  };
}
