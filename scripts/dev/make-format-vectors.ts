// Developer aid: prints the core's current output for the format-vector inputs so a person can review it
// before it becomes an expectation in test/conformance/format.json. Not run by tests.
import { readFileSync } from 'node:fs';
import { checkFormat } from '../../src/core/rules';
import { formatVector } from '../../test/conformance/project';

const inputs = JSON.parse(readFileSync(process.argv[2], 'utf8')) as {
  name: string;
  text: string;
  options?: Record<string, unknown>;
}[];
const out = inputs.map((c) => {
  const r = checkFormat(c.text, c.options ?? {});
  return { ...c, expect: formatVector(r) };
});
console.log(JSON.stringify(out, null, 1));
