// The record view: one record of a trajectory file of any size, opened as a trajectory notebook of its own (steps
// as cells, the reward breakdown, token overlays, replay and fork) without parsing the rest of the file. It is a
// notebook over a `coa-record:` document — `<file>/<line>/<id>.coa.jsonl` — whose bytes are the record's line, read
// at its offset (recordFile.ts); saving writes the edited line (and any replay added below it) back in place.
// The live panel, the Runs view, the trajectory browser and Problems open records through `openRecord`.
import * as vscode from 'vscode';
import { parseRecordLine } from '../../../core/jsonl';
import { looksLikeVerlDump, verlLineParser } from '../../../core/importers/verl-rollouts';
import { recordViews } from './serializer';
import {
  type LineAt,
  type LineRead,
  parseRecordViewPath,
  readLineAt,
  readSpan,
  recordViewPath,
  replaceSpan,
  safeName,
} from './recordFile';

export const RECORD_SCHEME = 'coa-record';

/** Where a record is: its file and 1-based line; a byte offset and length when the caller has them (checked). */
export interface RecordLocation {
  file: vscode.Uri;
  line: number;
  offset?: number;
  length?: number;
  /** The id the caller expects there (a Problems quick fix names the record it saw in the editor's text): a line
   *  that holds another record on disk (unsaved edits moved it) is refused, not shown as if it were that one. */
  id?: string;
}

export interface OpenRecordOptions {
  viewColumn?: vscode.ViewColumn;
  preserveFocus?: boolean;
  preview?: boolean;
}

/** A record view's bytes as served: the line(s) at `offset` (terminators included), for the check before a save. */
interface Served {
  offset: number;
  bytes: Buffer;
  mtime: number;
}

export class RecordViews implements vscode.FileSystemProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changed.event;
  private readonly served = new Map<string, Served>();
  /** Offsets callers gave, by `<file>\n<line>` (a hint: readLineAt checks it is still a whole line). */
  private readonly hints = new Map<string, Pick<LineAt, 'offset' | 'length'>>();
  /** A line `open` has just read for its id, by `<file>\n<line>\n<name>`: readFile takes it instead of reading again. */
  private readonly preread = new Map<string, LineRead>();
  /** How long the last readFile took (for the open's log line). */
  private lastRead = 0;

  constructor(private readonly log: vscode.LogOutputChannel) {}

  /** Open the record at `loc` in its record view. Returns the notebook editor. */
  async open(loc: RecordLocation, options: OpenRecordOptions = {}): Promise<vscode.NotebookEditor> {
    const t0 = performance.now();
    const file = loc.file.fsPath;
    const key = `${file}\n${loc.line}`;
    if (loc.offset !== undefined && loc.length !== undefined)
      this.hints.set(key, { offset: loc.offset, length: loc.length });
    // The line is read here for its id (the view's name), and handed to readFile so it is not read twice.
    const at = await readLineAt(file, loc.line, this.hints.get(key));
    this.hints.set(key, { offset: at.offset, length: at.length });
    const name = nameOf(at.bytes.toString('utf8'), loc.line);
    if (loc.id !== undefined && safeName(loc.id) !== name) {
      throw new Error(
        `line ${loc.line} holds ${name === `line-${loc.line}` ? 'no record' : `record ${name}`} on disk, not ${loc.id} (unsaved edits?): save the file to open ${loc.id}`,
      );
    }
    this.preread.set(`${file}\n${loc.line}\n${name}`, at);
    const uri = vscode.Uri.from({ scheme: RECORD_SCHEME, path: recordViewPath(loc.file.path, loc.line, name) });
    const t1 = performance.now();
    this.lastRead = -1;
    let doc: vscode.NotebookDocument;
    try {
      doc = await vscode.workspace.openNotebookDocument(uri);
    } finally {
      // Not taken when the view was open already: never let a later read use these bytes.
      this.preread.delete(`${file}\n${loc.line}\n${name}`);
    }
    const t2 = performance.now();
    const editor = await vscode.window.showNotebookDocument(doc, {
      viewColumn: options.viewColumn,
      preserveFocus: options.preserveFocus,
      preview: options.preview ?? true,
    });
    const t3 = performance.now();
    // Where the time of an open goes on this side (bench/live-panel reads these lines): the rest is the editor's.
    this.log.info(
      `record view: opened ${name} (line ${loc.line} of ${vscode.workspace.asRelativePath(loc.file)}): line read ${ms(t1 - t0)}, document ${ms(t2 - t1)} (${this.lastRead < 0 ? 'open already' : `read ${ms(this.lastRead)}`}, ${doc.cellCount} cells), editor ${ms(t3 - t2)}`,
    );
    return editor;
  }

  /** Open the record at `loc` (beside the active editor unless told otherwise); a failure is said, not thrown. */
  async show(loc: RecordLocation, options: OpenRecordOptions = {}): Promise<void> {
    try {
      await this.open(loc, { ...options, viewColumn: options.viewColumn ?? vscode.ViewColumn.Beside });
    } catch (e) {
      void vscode.window.showErrorMessage(
        `CoA: cannot open line ${loc.line} of ${vscode.workspace.asRelativePath(loc.file)}: ${(e as Error).message}`,
      );
    }
  }

  // ---- FileSystemProvider ---------------------------------------------------------------------------------

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  async stat(uri: vscode.Uri): Promise<vscode.FileStat> {
    const served = this.served.get(uri.toString());
    if (served)
      return { type: vscode.FileType.File, ctime: served.mtime, mtime: served.mtime, size: served.bytes.length };
    const { file } = this.where(uri);
    try {
      const s = await vscode.workspace.fs.stat(vscode.Uri.file(file));
      return { type: vscode.FileType.File, ctime: s.ctime, mtime: s.mtime, size: 0 };
    } catch {
      throw vscode.FileSystemError.FileNotFound(uri);
    }
  }

  async readFile(uri: vscode.Uri): Promise<Uint8Array> {
    const { file, line, name } = this.where(uri);
    const key = uri.toString();
    const before = this.served.get(key);
    // What this view saved last (a replay may have added lines below the record), when it is still on disk.
    let bytes = before && (await readSpan(file, before.offset, before.bytes).catch(() => null));
    let offset = before?.offset ?? 0;
    if (!bytes) {
      const t0 = performance.now();
      let at = this.preread.get(`${file}\n${line}\n${name}`);
      this.preread.delete(`${file}\n${line}\n${name}`);
      try {
        at ??= await readLineAt(file, line, this.hints.get(`${file}\n${line}`));
      } catch (e) {
        throw vscode.FileSystemError.FileNotFound(`${(e as Error).message}`);
      }
      this.hints.set(`${file}\n${line}`, { offset: at.offset, length: at.length });
      this.lastRead = performance.now() - t0;
      const text = at.bytes.toString('utf8');
      if (nameOf(text, line) !== name) {
        throw vscode.FileSystemError.FileNotFound(
          `${file}:${line} no longer holds record ${name} (the file changed since it was listed); open it again from its list`,
        );
      }
      bytes = Buffer.concat([at.bytes, Buffer.from(at.eol)]);
      offset = at.offset;
    }
    this.served.set(key, { offset, bytes, mtime: before && before.bytes.equals(bytes) ? before.mtime : Date.now() });
    // The serializer gets bytes, not a URI: it finds the record's line and file by the text (consumed on open).
    recordViews.set(bytes.toString('utf8'), { line, file: vscode.workspace.asRelativePath(file) });
    return bytes;
  }

  async writeFile(uri: vscode.Uri, content: Uint8Array): Promise<void> {
    const { file } = this.where(uri);
    const key = uri.toString();
    const served = this.served.get(key);
    if (!served) throw vscode.FileSystemError.Unavailable(`${uri.path}: reopen the record before saving it`);
    try {
      await replaceSpan(file, served.offset, served.bytes, content);
    } catch (e) {
      throw vscode.FileSystemError.Unavailable((e as Error).message);
    }
    const delta = content.byteLength - served.bytes.length;
    this.served.set(key, { offset: served.offset, bytes: Buffer.from(content), mtime: Date.now() });
    // Views of later records of the same file: their bytes moved by `delta`.
    for (const [k, s] of this.served) {
      if (k !== key && s.offset > served.offset && this.where(vscode.Uri.parse(k)).file === file) s.offset += delta;
    }
    for (const [k, h] of this.hints) if (k.startsWith(`${file}\n`) && h.offset > served.offset) h.offset += delta;
    this.log.info(
      `record view: saved ${uri.path} into ${file} at byte ${served.offset} (${delta >= 0 ? '+' : ''}${delta} bytes)`,
    );
    this.changed.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }

  readDirectory(): never {
    throw vscode.FileSystemError.NoPermissions('a record view is one record');
  }
  createDirectory(): never {
    throw vscode.FileSystemError.NoPermissions('a record view is one record');
  }
  delete(): never {
    throw vscode.FileSystemError.NoPermissions('close the record view instead');
  }
  rename(): never {
    throw vscode.FileSystemError.NoPermissions('a record view cannot be renamed');
  }

  /** Forget what a closed view served. */
  closed(uri: vscode.Uri): void {
    this.served.delete(uri.toString());
  }

  private where(uri: vscode.Uri): { file: string; line: number; name: string } {
    const p = parseRecordViewPath(uri.path);
    if (!p) throw vscode.FileSystemError.FileNotFound(uri);
    return { ...p, file: vscode.Uri.from({ scheme: 'file', path: p.file }).fsPath };
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/** The file and line a record view shows (undefined for any other URI). */
export function recordViewSource(uri: vscode.Uri): { file: vscode.Uri; line: number } | undefined {
  if (uri.scheme !== RECORD_SCHEME) return undefined;
  const p = parseRecordViewPath(uri.path);
  return p ? { file: vscode.Uri.from({ scheme: 'file', path: p.file }), line: p.line } : undefined;
}

const ms = (x: number) => `${x.toFixed(1)} ms`;

/** The name a record's view has: its id as a file name, or `line-N` for a line that is not a record. */
function nameOf(raw: string, line: number): string {
  const entry = looksLikeVerlDump(raw) ? verlLineParser()(raw, line) : parseRecordLine(raw, line);
  return entry.record ? safeName(entry.record.id) : `line-${line}`;
}

export function registerRecordViews(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): RecordViews {
  const views = new RecordViews(log);
  context.subscriptions.push(
    views,
    vscode.workspace.registerFileSystemProvider(RECORD_SCHEME, views, { isCaseSensitive: true }),
    vscode.workspace.onDidCloseNotebookDocument((doc) => doc.uri.scheme === RECORD_SCHEME && views.closed(doc.uri)),
  );
  return views;
}

/** Arguments of the `coaStudio.openRecord` command (scripted callers and command links; features call `show`). */
export function recordLocationFrom(arg: unknown): RecordLocation | undefined {
  if (!arg || typeof arg !== 'object') return undefined;
  const o = arg as { file?: unknown; line?: unknown; offset?: unknown; length?: unknown; id?: unknown };
  const file =
    o.file instanceof vscode.Uri
      ? o.file
      : typeof o.file === 'string'
        ? o.file.includes('://')
          ? vscode.Uri.parse(o.file)
          : vscode.Uri.file(o.file)
        : undefined;
  const line = Number(o.line);
  if (!file || !Number.isInteger(line) || line < 1) return undefined;
  const num = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined);
  return { file, line, offset: num(o.offset), length: num(o.length), id: typeof o.id === 'string' ? o.id : undefined };
}

/** The options argument of `coaStudio.openRecord`, kept to the fields it knows. */
function openRecordOptionsFrom(arg: unknown): OpenRecordOptions {
  if (!arg || typeof arg !== 'object') return {};
  const o = arg as Record<string, unknown>;
  return {
    viewColumn: typeof o.viewColumn === 'number' ? (o.viewColumn as vscode.ViewColumn) : undefined,
    preserveFocus: typeof o.preserveFocus === 'boolean' ? o.preserveFocus : undefined,
    preview: typeof o.preview === 'boolean' ? o.preview : undefined,
  };
}

/** `coaStudio.openRecord`: the command's arguments parsed, then `RecordViews.show`. */
export async function openRecordCommand(views: RecordViews, where: unknown, options: unknown): Promise<void> {
  const loc = recordLocationFrom(where);
  if (!loc)
    return void vscode.window.showInformationMessage('CoA: Open Record needs a file and a line ({ file, line }).');
  await views.show(loc, openRecordOptionsFrom(options));
}
