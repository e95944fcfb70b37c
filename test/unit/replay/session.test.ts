// The replay session behind the NotebookController, in-process with the tiny exported model: a cell per step
// appended as it is generated, then the notebook's own cells of the replayed record (saved as one more line,
// the source line untouched), latencies shown; cancel removes the provisional cells.
import test from 'node:test';
import assert from 'node:assert/strict';
import { OnnxModel } from '../../../src/replay/model';
import { runReplaySession, type CellSink } from '../../../src/extension/providers/replay/session';
import { textToNotebook, notebookToText, type CellData } from '../../../src/extension/providers/notebook/codec';
import { cellMeta, REWARD_MIME } from '../../../src/extension/providers/notebook/cells';
import { tinyModel } from './fixture';

const SOURCE = {
  id: 'q1',
  question: 'who wrote the book of sand ?',
  golden_answers: ['borges'],
  response: '<answer> nobody </answer>',
};

function arraySink(cells: CellData[], at: number, log: string[]): CellSink {
  let count = 0;
  return {
    append: async (added) => {
      cells.splice(at + count, 0, ...added);
      count += added.length;
      log.push(`append ${added.length}`);
    },
    replaceAll: async (final) => {
      cells.splice(at, count, ...final);
      count = final.length;
      log.push(`replace ${final.length}`);
    },
  };
}

test('replay session: steps appended as generated, final cells save as a new line after the untouched source', async (t) => {
  const { onnx } = tinyModel();
  const model = await OnnxModel.load(onnx);
  t.after(() => model.release());
  const line = JSON.stringify(SOURCE);
  const nb = textToNotebook(line + '\n');
  const cells = nb.cells.slice();
  const log: string[] = [];
  const sizes: number[] = [];
  const sink = arraySink(cells, cells.length, log);
  const r = await runReplaySession({
    model,
    source: SOURCE,
    mode: 'simulated',
    scheme: 'em',
    sink: {
      append: async (c) => {
        await sink.append(c);
        sizes.push(cells.length);
      },
      replaceAll: sink.replaceAll,
    },
  });
  assert.equal(r.status, 'done');
  assert.deepEqual(log.slice(0, 4), ['append 1', 'append 1', 'append 1', 'append 1'], 'header, then one cell per step');
  assert.equal(r.steps, 3);
  assert.deepEqual(sizes, [sizes[0], sizes[0] + 1, sizes[0] + 2, sizes[0] + 3]);
  const replayCells = cells.slice(nb.cells.length);
  assert.equal(cellMeta(replayCells[0].metadata)?.kind, 'header');
  assert.match(
    replayCells[0].value,
    /^\*replay, written as a new line on save · dialect coa · stage \*\*replay\*\*\*$/m,
  );
  const steps = replayCells.filter((c) => cellMeta(c.metadata)?.kind === 'step');
  assert.ok(steps.length >= 3);
  assert.equal(steps.map((c) => c.value).join(''), r.record!.response);
  const latencies = steps.flatMap((c) =>
    (c.outputs ?? [])
      .flat()
      .filter((o) => o.mime === 'text/plain' && /· [\d.]+ ms/.test(String(o.data)))
      .map((o) => String(o.data)),
  );
  assert.equal(latencies.join('\n').split('\n').length, 3, 'each step has its latency');
  assert.ok(
    replayCells.some((c) =>
      (c.outputs ?? [])
        .flat()
        .some((o) => o.mime === REWARD_MIME && (o.data as { breakdown: { em: number } }).breakdown.em === 1),
    ),
  );
  const saved = notebookToText({ cells, metadata: nb.metadata });
  const [first, second, rest] = saved.split('\n');
  assert.equal(first, line);
  assert.equal(JSON.parse(second).id, 'q1#replay-simulated');
  assert.deepEqual(JSON.parse(second).tokens.ids, r.record!.tokens!.ids);
  assert.equal(rest, '');
});

test('replay session: cancel removes the provisional cells', async (t) => {
  const { onnx } = tinyModel();
  const model = await OnnxModel.load(onnx);
  t.after(() => model.release());
  const cells: CellData[] = [];
  const ctl = new AbortController();
  let appended = 0;
  const sink = arraySink(cells, 0, []);
  const r = await runReplaySession({
    model,
    source: SOURCE,
    mode: 'simulated',
    signal: ctl.signal,
    sink: {
      append: async (c) => {
        await sink.append(c);
        if (++appended === 2) ctl.abort();
      },
      replaceAll: sink.replaceAll,
    },
  });
  assert.equal(r.status, 'cancelled');
  assert.equal(r.steps, 1);
  assert.deepEqual(cells, []);
});
