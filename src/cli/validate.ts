// `coa validate`: every problem as `file:line:col: severity CODE message`; exit 1 if any error. With --tokens, each
// record's token ids are audited against what their text re-tokenizes to with the run's tokenizer (COA106 warnings at
// the first divergent token: src/core/tokenAudit.ts; the tokenizer found by src/replay/findTokenizer.ts or given).
import { readFileSync } from 'node:fs';
import { RECORD_RULES } from '../core/codes';
import { readJsonl } from '../core/jsonl';
import { mapStringAt } from '../core/jsonstring';
import { checkFormat, FormatOptions } from '../core/rules';
import { recordFormatOptions } from '../core/recordFormat';
import { isQuestion } from '../core/record';
import { QuestionTally, describeQuestions } from '../core/questionSummary';
import { CliError, ParsedArgs } from './args';
import { convertHint, formatOptions, requireFile } from './common';
import { TokenAuditor } from './tokenAudit';

export async function runValidate(args: ParsedArgs): Promise<number> {
  if (args.positional.length === 0) throw new CliError('validate: give one or more files');
  const options = formatOptions(args);
  let errors = 0;
  let warnings = 0;
  let records = 0;
  const questions = new QuestionTally();
  const report = (file: string, line: number, col: number, severity: string, code: string, message: string) => {
    if (severity === 'error') errors++;
    else warnings++;
    console.log(`${file}:${line}:${col}: ${severity} ${code} ${message}`);
  };
  const auditor = args.flags.tokens ? new TokenAuditor(args.flags.tokenizer as string | undefined) : null;
  for (const file of args.positional) {
    requireFile(file);
    if (file.endsWith('.coa')) {
      records++;
      validateRaw(file, options, report);
      continue;
    }
    const hint = convertHint(file);
    if (hint) {
      report(file, 1, 1, 'error', 'COA104', hint);
      continue;
    }
    const seen = new Map<string, number>();
    for await (const entry of readJsonl(file)) {
      if (entry.problem) {
        report(
          file,
          entry.line,
          entry.problem.column,
          RECORD_RULES[entry.problem.code].severity,
          entry.problem.code,
          entry.problem.message,
        );
        if (entry.problem.code === 'COA104') break;
        continue;
      }
      const record = entry.record!;
      records++;
      const firstLine = seen.get(record.id);
      if (firstLine !== undefined) {
        const col = entry.raw.indexOf(JSON.stringify(record.id)) + 1;
        report(
          file,
          entry.line,
          Math.max(1, col),
          'error',
          'COA103',
          `duplicate id "${record.id}" (first on line ${firstLine})`,
        );
      } else seen.set(record.id, entry.line);
      // A question (no response yet) is prompt-only data: the format rules are for responses (core/record.ts).
      if (isQuestion(record)) {
        questions.add(record);
        continue;
      }
      if (auditor && record.tokens) {
        const drift = await auditor.audit(file, record);
        if (drift) {
          const map = mapStringAt(entry.raw, ['response']);
          report(
            file,
            entry.line,
            map ? map.toRaw(drift.offset) + 1 : 1,
            'warning',
            'COA106',
            `token drift: ${drift.message}`,
          );
        }
      }
      const result = checkFormat(record.response, recordFormatOptions(record, options));
      if (result.diagnostics.length === 0) continue;
      const map = mapStringAt(entry.raw, ['response']);
      for (const d of result.diagnostics) {
        const col = map ? map.toRaw(d.start) + 1 : 1;
        report(file, entry.line, col, d.severity, d.code, d.message);
      }
    }
  }
  console.error(`validate: ${records} records, ${errors} errors, ${warnings} warnings`);
  if (auditor) console.error(`validate: ${auditor.summary()}`);
  const asked = questions.summary();
  if (asked.questions) console.error(`validate: ${describeQuestions(asked)}`);
  return errors > 0 ? 1 : 0;
}

/** A `.coa` file is one raw response. */
function validateRaw(
  file: string,
  options: FormatOptions,
  report: (f: string, l: number, c: number, s: string, code: string, m: string) => void,
): void {
  const buf = readFileSync(file);
  if (buf.subarray(0, 8192).includes(0)) {
    report(file, 1, 1, 'error', 'COA104', 'binary data, not a text file');
    return;
  }
  const text = buf.toString('utf8');
  const lineStarts = [0];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lineStarts.push(i + 1);
  for (const d of checkFormat(text, options).diagnostics) {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid] <= d.start) lo = mid;
      else hi = mid - 1;
    }
    report(file, lo + 1, d.start - lineStarts[lo] + 1, d.severity, d.code, d.message);
  }
}
