// JSON as Python writes it. `json.dumps` writes a float NaN or infinity as the bare tokens `NaN`, `Infinity` and
// `-Infinity`, which JSON.parse refuses: a verl rollout dump row whose score was NaN was dropped as invalid JSON. Those
// tokens (outside strings) read as null — the value is not a number anyone can chart or sum, and null is what
// orjson writes for it (verl's metrics file).

/** JSON.parse, falling back to reading Python's NaN / Infinity / -Infinity tokens as null. Throws as JSON.parse. */
export function parsePythonJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    if (!/NaN|Infinity/.test(text)) throw e;
    const cleaned = nonFiniteToNull(text);
    if (cleaned === text) throw e;
    return JSON.parse(cleaned);
  }
}

/** `text` with every NaN / Infinity / -Infinity token outside a string replaced by null. */
function nonFiniteToNull(text: string): string {
  let out = '';
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      continue;
    }
    const token = text.startsWith('NaN', i)
      ? 'NaN'
      : text.startsWith('-Infinity', i)
        ? '-Infinity'
        : text.startsWith('Infinity', i)
          ? 'Infinity'
          : null;
    if (token) {
      out += `${text.slice(from, i)}null`;
      i += token.length - 1;
      from = i + 1;
    }
  }
  return out + text.slice(from);
}
