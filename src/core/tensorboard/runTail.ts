// A TensorBoard run — a folder holding `events.out.tfevents.*` files (verl's `tensorboard` logger, torch's
// SummaryWriter, our trainer's `logging.tensorboard`) — as a stream of protocol `metrics` events, so the live panel
// charts it like one of our runs: each file is read from where the last read stopped (a writer appends whole
// records; a read that ends mid-record keeps the rest for the next), the points of one step in one file become one
// metrics event. The stage is the folder's name (our trainer writes <dir>/<stage>/, so RL-2's scalars land on the
// RL-2 tab). A file that shrinks or is replaced is read again from the start and the consumer told to reset.
// No vscode import: the panel and tests use it.
import { open, readdir, stat } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { TrainerEvent } from '../events';
import type { TailBatch } from '../eventTail';
import { eventScalars, isEventFileName, readRecords } from './tfevents';

/** Does `dir` hold TensorBoard event files directly? */
export function isTensorBoardRunDir(dir: string): boolean {
  try {
    return readdirSync(dir).some(isEventFileName);
  } catch {
    return false;
  }
}

/** A stage name from a folder name: the protocol's stage is any non-empty string, kept readable. */
export function tensorBoardStage(dir: string): string {
  return basename(dir).replace(/\s+/g, '-') || 'tensorboard';
}

interface FileState {
  offset: number;
  ino: number;
  plugins: Map<string, string>;
  corruptReported: boolean;
}

export class TensorBoardTail {
  private readonly files = new Map<string, FileState>();
  private reading: Promise<TailBatch> | undefined;
  /** A run_started went out (the panel's status line; again after a reset), as the verl adapter does. */
  private started = false;

  constructor(
    /** The run folder (the live panel's key). */
    readonly file: string,
    private readonly run = basename(file),
    readonly stage = tensorBoardStage(file),
  ) {}

  /** Reads what was appended to the folder's event files since the last call. Never throws for a missing folder. */
  read(): Promise<TailBatch> {
    const next = (this.reading ?? Promise.resolve(undefined)).then(() => this.readOnce());
    this.reading = next.catch(() => ({ reset: false, events: [], issues: [] }));
    return next;
  }

  private async readOnce(): Promise<TailBatch> {
    const batch: TailBatch = { reset: false, events: [], issues: [] };
    let names: string[];
    try {
      names = (await readdir(this.file)).filter(isEventFileName).sort(); // TensorBoard's order: by the file's timestamp
    } catch {
      return batch;
    }
    const infos = new Map<string, { ino: number; size: number }>();
    for (const name of names) {
      try {
        const info = await stat(join(this.file, name));
        infos.set(name, { ino: info.ino, size: info.size });
      } catch {
        /* gone between the listing and now */
      }
    }
    // a file that went away, shrank or was replaced: what came from the folder no longer stands, read it anew
    const stale = [...this.files].some(([name, st]) => {
      const now = infos.get(name);
      return !now || now.ino !== st.ino || now.size < st.offset;
    });
    if (stale) {
      this.files.clear();
      this.started = false;
      batch.reset = true;
    }
    for (const [name, info] of infos) await this.readFile(name, info, batch);
    if (!this.started && batch.events.length) {
      this.started = true;
      batch.events.unshift({
        v: 1,
        time: batch.events[0].time,
        run: this.run,
        type: 'run_started',
        stage: this.stage,
        config: { engine: 'tensorboard', folder: this.file },
        total_steps: 0,
        device: 'TensorBoard files',
        world_size: 1,
      });
    }
    return batch;
  }

  private async readFile(name: string, info: { ino: number; size: number }, batch: TailBatch): Promise<void> {
    const path = join(this.file, name);
    let state = this.files.get(name);
    if (!state)
      this.files.set(name, (state = { offset: 0, ino: info.ino, plugins: new Map(), corruptReported: false }));
    if (state.corruptReported || info.size <= state.offset) return; // past a corrupt record nothing can be framed
    const fh = await open(path, 'r');
    let buf: Buffer;
    try {
      buf = Buffer.alloc(info.size - state.offset);
      const { bytesRead } = await fh.read(buf, 0, buf.length, state.offset);
      buf = buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
    const { payloads, consumed, corrupt } = readRecords(buf);
    if (corrupt && !state.corruptReported) {
      state.corruptReported = true;
      batch.issues.push({
        file: path,
        line: 1,
        column: state.offset + corrupt.offset + 1,
        message: `${corrupt.message} at byte ${state.offset + corrupt.offset}: the rest of this file is not read`,
      });
    }
    state.offset += consumed;
    let current: Extract<TrainerEvent, { type: 'metrics' }> | null = null;
    for (const payload of payloads) {
      let points;
      try {
        points = eventScalars(payload, state.plugins);
      } catch {
        continue; // frames and checksums, yet is not an Event: nothing to chart
      }
      for (const p of points) {
        if (p.step < 0 || !Number.isSafeInteger(p.step)) continue;
        if (!current || current.step !== p.step) {
          current = {
            v: 1,
            time: p.wallTime,
            run: this.run,
            type: 'metrics',
            stage: this.stage,
            step: p.step,
            values: {},
          };
          batch.events.push(current);
        }
        current.values[p.tag] = Number.isFinite(p.value) ? p.value : null;
      }
    }
  }
}
