// Token audit (src/core/tokenAudit.ts, `coa validate --tokens`) with a realistic byte-level BPE tokenizer (Qwen2's
// pre-tokenizer, tags as text: src/trainer/tests/realistic_model.py, built by the replay fixture). A rollout loop
// appends each turn's ids as tokenized alone; where the observation it appends starts with the newlines that close
// the model's tag, byte-level BPE re-encodes `>` + `\n\n` as one token across the tag boundary — the drift is flagged
// at the model turn's last token. A sampled turn that spelt a word in two tokens is flagged at that token.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditTokens } from '../../../src/core/tokenAudit';
import { Tokenizer } from '../../../src/replay/tokenizer';
import { codecOf } from '../../../src/cli/tokenAudit';
import { main } from '../../../src/cli/main';
import { tinyModel } from './fixture';
import { demoRun } from '../../fixtures/demoRun';

const tokPath = () => join(tinyModel().dir, 'realistic/model/tokenizer.json');

/** A record as a rollout loop stores it: each turn tokenized alone, ids appended, loss mask 1 on model turns. */
async function record(tok: Tokenizer, turns: [text: string, model: boolean][]) {
  const ids: number[] = [];
  const loss_mask: number[] = [];
  for (const [text, model] of turns) {
    const e = await tok.encode(text);
    ids.push(...e.ids);
    loss_mask.push(...e.ids.map(() => (model ? 1 : 0)));
  }
  return {
    id: 'r1',
    question: 'Is it A?',
    golden_answers: ['yes'],
    dialect: 'search-r1' as const,
    response: turns.map(([t]) => t).join(''),
    tokens: { ids, loss_mask },
  };
}

const T1 = '<think> I need to search. </think>\n<search> query </search>';
const OBS = '<information>Doc 1(Title: "A") text\n</information>\n\n';
const T2 = '<think> found it. </think>\n<answer> yes </answer>';

test('turns appended as tokenized alone: clean when the model writes its newlines; drift across the tag boundary when the observation brings them', async () => {
  const tok = Tokenizer.fromFile(tokPath());
  const codec = codecOf(tok);
  // Clean: the model closes </search> and writes "\n\n" itself; the observation starts at "<information".
  const clean = await record(tok, [
    [`${T1}\n\n`, true],
    [OBS, false],
    [T2, true],
  ]);
  const a = (await auditTokens(clean, codec))!;
  assert.equal(a.first, null, JSON.stringify(a.first));
  assert.deepEqual(
    a.turns.map((t) => [t.kind, t.divergence]),
    [
      ['model', null],
      ['appended', null],
      ['model', null],
    ],
  );
  // Injected: the same text, but the observation brings the "\n\n" (an environment that prepends them).
  const drift = await record(tok, [
    [T1, true],
    [`\n\n${OBS}`, false],
    [T2, true],
  ]);
  const t1 = (await tok.encode(T1)).ids.length;
  const b = (await auditTokens(drift, codec))!;
  assert.ok(
    b.turns.every((t) => t.divergence === null),
    'each turn is its own tokenization',
  );
  assert.equal(b.whole?.index, t1 - 1, "the model turn's last token, where the tag boundary is");
  assert.equal(b.first?.index, t1 - 1);
  assert.equal(b.first?.text, '>');
  assert.equal(
    await tok.decode(b.whole!.retokenized.slice(0, 1)),
    '>\n\n',
    "> and the observation's newlines as one token",
  );
  assert.match(b.first!.where, /whole response/);
});

test('a sampled turn that spelt a word in two tokens: flagged at that token, in that turn', async () => {
  const tok = Tokenizer.fromFile(tokPath());
  const clean = await record(tok, [
    [`${T1}\n\n`, true],
    [OBS, false],
    [T2, true],
  ]);
  // " found" sampled as two tokens of the vocabulary that decode to the same text (as a sampler may pick).
  const found = (await tok.encode(' found')).ids;
  assert.equal(found.length, 1);
  const piece = tok.idToTokenText(found[0])!;
  const k = [...Array(piece.length).keys()]
    .slice(1)
    .find((i) => tok.tokenToId(piece.slice(0, i)) !== undefined && tok.tokenToId(piece.slice(i)) !== undefined)!;
  const parts = [tok.tokenToId(piece.slice(0, k))!, tok.tokenToId(piece.slice(k))!];
  const at = clean.tokens.ids.lastIndexOf(found[0]);
  const ids = [...clean.tokens.ids.slice(0, at), ...parts, ...clean.tokens.ids.slice(at + 1)];
  const loss_mask = [...clean.tokens.loss_mask.slice(0, at), 1, 1, ...clean.tokens.loss_mask.slice(at + 1)];
  const a = (await auditTokens({ tokens: { ids, loss_mask } }, codecOf(tok)))!;
  assert.equal(await tok.decode(ids), clean.response);
  assert.deepEqual(
    a.turns.map((t) => t.divergence?.index ?? null),
    [null, null, at],
  );
  assert.deepEqual(
    [a.first!.index, a.first!.text, a.first!.retokenized[0]],
    [at, await tok.decode([parts[0]]), found[0]],
  );
  assert.match(a.first!.where, /^turn 3 \(model-written/);
});

test("coa validate --tokens: COA106 at the first divergent token's column, the clean record silent", async () => {
  const tok = Tokenizer.fromFile(tokPath());
  const dir = mkdtempSync(join(tmpdir(), 'coa-audit-'));
  try {
    const clean = await record(tok, [
      [`${T1}\n\n`, true],
      [OBS, false],
      [T2, true],
    ]);
    const drift = {
      ...(await record(tok, [
        [T1, true],
        [`\n\n${OBS}`, false],
        [T2, true],
      ])),
      id: 'r2',
    };
    const file = join(dir, 'rollouts.coa.jsonl');
    const lines = [JSON.stringify(clean), JSON.stringify(drift)];
    writeFileSync(file, lines.join('\n') + '\n');
    const out: string[] = [];
    const err: string[] = [];
    const [log, error] = [console.log, console.error];
    console.log = (s: string) => void out.push(s);
    console.error = (s: string) => void err.push(s);
    try {
      assert.equal(await main(['validate', file, '--tokens', '--tokenizer', tokPath()]), 0, 'drift is a warning');
    } finally {
      [console.log, console.error] = [log, error];
    }
    assert.equal(out.length, 1, out.join('\n'));
    const m =
      /^(.*):(\d+):(\d+): warning COA106 token drift: token 15 ">": stored \[(\d+)[^\]]*\] ≠ re-tokenized \[(\d+)/.exec(
        out[0],
      );
    assert.ok(m, out[0]);
    assert.equal(m[2], '2');
    // The column is the `>` closing </search> in the JSON line.
    const col = Number(m[3]);
    assert.equal(lines[1].slice(col - 1, col + 2), '>\\n', lines[1].slice(col - 10, col + 10));
    assert.match(err.join('\n'), /token audit: 2 records with tokens, 1 with drift/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the demo run's RL-2-OTC rollouts: the run's own tokenizer is found beside them, and no record drifts", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'coa-audit-'));
  try {
    demoRun(dir);
    const err: string[] = [];
    const [log, error] = [console.log, console.error];
    console.log = () => undefined;
    console.error = (s: string) => void err.push(s);
    try {
      await main(['validate', join(dir, 'stages/rl2-otc/rollouts.coa.jsonl'), '--tokens']);
    } finally {
      [console.log, console.error] = [log, error];
    }
    assert.match(err.join('\n'), /token audit with .*stages\/rl2-otc\/final\/tokenizer\.json/);
    assert.match(err.join('\n'), /token audit: 1536 records with tokens, 0 with drift/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
