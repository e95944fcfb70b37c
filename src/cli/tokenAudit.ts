// `coa validate --tokens`: each record's audit (src/core/tokenAudit.ts) with the tokenizer of the run the file belongs
// to (src/replay/findTokenizer.ts), or --tokenizer; loaded once per tokenizer file.
import { auditTokens, codePointToUtf16, describeDivergence, type TokenCodec } from '../core/tokenAudit';
import type { TrajectoryRecord } from '../core/record';
import { findRunTokenizer, tokenizerFile } from '../replay/findTokenizer';
import { Tokenizer, TokenizerError } from '../replay/tokenizer';
import { CliError } from './args';

export function codecOf(tok: Tokenizer): TokenCodec {
  return { encode: async (text) => (await tok.encode(text)).ids, decode: (ids) => tok.decode(ids) };
}

export class TokenAuditor {
  private readonly loaded = new Map<string, Tokenizer>();
  private readonly perFile = new Map<string, string>();
  private audited = 0;
  private drifted = 0;

  constructor(private readonly given?: string) {}

  private tokenizerFor(file: string, record: TrajectoryRecord): Tokenizer {
    let path = this.perFile.get(file);
    if (!path) {
      if (this.given) {
        const f = tokenizerFile(this.given);
        if (!f) throw new CliError(`--tokenizer ${this.given}: no tokenizer.json there`);
        path = f;
      } else {
        const found = findRunTokenizer(file, typeof record.meta?.stage === 'string' ? record.meta.stage : null);
        if (!found.path)
          throw new CliError(
            `${file}: no tokenizer of its run found (looked in ${found.tried.join(', ')}): give --tokenizer <model dir or tokenizer.json>`,
          );
        path = found.path;
      }
      this.perFile.set(file, path);
      console.error(`validate: ${file}: token audit with ${path}`);
    }
    let tok = this.loaded.get(path);
    if (!tok) {
      try {
        tok = Tokenizer.fromFile(path);
      } catch (e) {
        throw new CliError(e instanceof TokenizerError ? e.message : `${path}: ${(e as Error).message}`);
      }
      this.loaded.set(path, tok);
    }
    return tok;
  }

  /** The record's first divergence: its message and the character offset in `response` of the token. */
  async audit(file: string, record: TrajectoryRecord): Promise<{ message: string; offset: number } | null> {
    const tok = this.tokenizerFor(file, record);
    let audit;
    try {
      audit = await auditTokens(record, codecOf(tok));
    } catch (e) {
      // an id outside the vocabulary: the wrong tokenizer, or corrupt ids — said at the record, not a crash
      return { message: (e as Error).message, offset: 0 };
    }
    if (!audit) return null;
    this.audited++;
    if (!audit.first) return null;
    this.drifted++;
    const ids = record.tokens!.ids;
    let offset = record.tokens!.offsets?.[audit.first.index];
    if (offset === undefined) {
      const d = await tok.decodeWithOffsets(ids);
      offset = d.text === record.response ? d.offsets[audit.first.index] : 0;
    }
    return { message: describeDivergence(audit.first), offset: codePointToUtf16(record.response, offset ?? 0) };
  }

  summary(): string {
    return `token audit: ${this.audited} records with tokens, ${this.drifted} with drift`;
  }
}
