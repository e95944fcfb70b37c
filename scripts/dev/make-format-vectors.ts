// Developer aid: prints the core's current output for the format-vector inputs so a person can review it
// before it becomes an expectation in test/conformance/format.json. Not run by tests.
import { readFileSync } from 'node:fs';
import { checkFormat } from '../../src/core/rules';

const inputs = JSON.parse(readFileSync(process.argv[2], 'utf8')) as { name: string; text: string; options?: Record<string, unknown> }[];
const out = inputs.map((c) => {
  const r = checkFormat(c.text, c.options ?? {});
  return {
    ...c,
    expect: {
      dialect: r.dialect,
      format_ok: r.formatOk,
      tool_calls: r.toolCalls,
      answer: r.answer,
      segments: r.segments.map((s) => [s.kind, s.start, s.end, ...(s.tool !== undefined ? [s.tool] : [])]),
      diagnostics: r.diagnostics.map((d) => [d.code, d.start, d.end]),
    },
  };
});
console.log(JSON.stringify(out, null, 1));
