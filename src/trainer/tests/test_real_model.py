"""The user's data path, end to end, on the realistic tiny chat model (tests/realistic_model.py: Qwen2, byte-level
BPE, ChatML): AutoCoA's HotpotQA parquet questions, the Search-R1 corpus, trajectories read through the
core (`coa data prepare`). Tags are text (vocabulary unchanged), prompts come from the chat template, masks come
from the core's segments (exact at token level, boundary rule held), turns stop on `</search>` however BPE
tokenised it, ids stay end to end (re-tokenisation mismatches 0), and SFT-1/2/3 and RL-2 run a few steps each."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
from pathlib import Path

import torch

from coa_trainer.rollout.agentio import AgentIO
from coa_trainer.base.config import validate_config
from coa_trainer.data.prepared import SftRecord, read_prepared
from coa_trainer.data.samples import encode_trajectory
from coa_trainer.data.dialects import tags
from coa_trainer.rollout.generate import StringStops, generate
from coa_trainer.model.load import Runtime, load_for_config
from coa_trainer.data.prompts import prompt_string
from coa_trainer.rollout.loop import retok_drift, retok_mismatch, rollout
from coa_trainer.contracts.schemas import dialect_prompts
from conftest import REPO, needs_env_server, merge, read_events, run_trainer

needs_server = needs_env_server()

PARQUET = REPO / "examples" / "data" / "autocoa" / "hotpotqa_train.parquet"
DEV_PARQUET = REPO / "examples" / "data" / "autocoa" / "hotpotqa_dev.parquet"
CORPUS = REPO / "examples" / "data" / "search-r1" / "corpus_example.jsonl"
CPU = Runtime(torch.device("cpu"), None)


def _node() -> list[str]:
    import shutil

    return [os.environ.get("COA_NODE") or shutil.which("node") or "node", str(REPO / "dist" / "cli.js")]


def _questions(n: int) -> list[dict]:
    """The first n questions of the parquet, through the core (never a Python parquet reader)."""
    out = Path(os.environ.get("PYTEST_TMP", "/tmp")) / f"coa-real-q-{os.getpid()}.jsonl"
    subprocess.run(
        [*_node(), "data", "prepare", "questions", str(PARQUET), "--out", str(out)], check=True, capture_output=True
    )
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()[:n]]
    out.unlink()
    return rows


def _docs(n: int) -> list[str]:
    with open(CORPUS, encoding="utf-8") as f:
        return [json.loads(line)["contents"] for line in f][:n]


def _trajectories(path: Path, n: int = 6) -> Path:
    """Search-R1-dialect trajectories for the first n parquet questions, with the corpus's documents as observations
    and Search-R1's layout (`</search>\\n\\n<information>…</information>\\n\\n`, whose `>\\n\\n` byte-level BPE merges
    into one token): per question a correct searching one, a correct tool-free one (every other question) and a
    wrong one, so the core's pair builder has chosen/rejected sides."""
    docs = _docs(4)
    lines = []
    for i, q in enumerate(_questions(n)):
        gold = q["golden_answers"][0]
        obs = f"Doc 1(Title: {docs[i % 4].splitlines()[0]}) {docs[i % 4].splitlines()[1][:160]}"
        search = (
            f"<think> I need to search. </think>\n<search> {q['question'][:60]} </search>\n\n"
            f"<information>{obs}</information>\n\n<think> found it. </think>\n<answer> {gold} </answer>"
        )
        base = {"question": q["question"], "golden_answers": q["golden_answers"], "dialect": "search-r1"}
        lines.append({"id": f"{q['id']}-s", **base, "response": search})
        if i % 2 == 0:
            lines.append(
                {"id": f"{q['id']}-d", **base, "response": f"<think> I know it. </think>\n<answer> {gold} </answer>"}
            )
        lines.append(
            {
                "id": f"{q['id']}-w",
                **base,
                "response": search.replace(f"<answer> {gold} </answer>", "<answer> nobody </answer>"),
            }
        )
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


def _config(model_dir: Path, traj: Path, **over) -> dict:
    base = {
        "seed": 0,
        "threads": 1,
        "device": "cpu",
        "dialect": "search-r1",
        "model": {"path": str(model_dir)},
        "data": {
            "questions": {"train": str(PARQUET), "dev": str(DEV_PARQUET)},
            "sft": [str(traj)],
            "corpus": str(CORPUS),
        },
        "stages": {
            "sft1": {"steps": 2, "batch_size": 2, "log_every": 1, "warmup_steps": 1, "max_len": 1024},
            "sft2": {
                "steps": 2,
                "batch_size": 2,
                "log_every": 1,
                "warmup_steps": 1,
                "max_len": 1024,
                "sample_every": 1,
            },
            "sft3": {
                "steps": 2,
                "batch_size": 2,
                "log_every": 1,
                "warmup_steps": 1,
                "max_len": 1024,
                "sample_every": 1,
            },
            "rl2": {
                "steps": 2,
                "prompts_per_step": 2,
                "group_size": 2,
                "max_new_tokens": 16,
                "max_obs_tokens": 64,
                "max_len": 1024,
                "heldout_every": 0,
                "sample_every": 1,
                "kl_coef": 0.001,
            },
        },
        "eval": {"limit": 2, "max_new_tokens": 16, "max_turns": 1, "batch_size": 2},
    }
    return merge(base, over)


def _prepare_sft(traj: Path, out: Path) -> list[SftRecord]:
    subprocess.run([*_node(), "data", "prepare", "sft", str(traj), "--out", str(out)], check=True, capture_output=True)
    return read_prepared(out, SftRecord)


# ---------------------------------------------------------------- model, vocabulary, prompt


def test_text_tags_keep_the_vocabulary_and_the_chat_template_builds_the_prompt(realistic_model_dir, tmp_path):
    from transformers import AutoTokenizer

    config = validate_config(_config(realistic_model_dir, tmp_path / "t.jsonl"))
    original = AutoTokenizer.from_pretrained(str(realistic_model_dir))
    model, tok = load_for_config(realistic_model_dir, CPU, config, trainable=False)
    assert len(tok) == len(original) and tok.get_vocab() == original.get_vocab()
    assert model.get_input_embeddings().weight.shape[0] == model.config.vocab_size == 1200
    assert not AgentIO.make(tok, tags("search-r1")).special  # `</search>` is several tokens here
    text = prompt_string(tok, config, "Who wrote Chocolat?")
    instruction = dialect_prompts()["search-r1"].user.replace("{question}", "Who wrote Chocolat?")
    # ChatML: the template's default system turn, the dialect's instruction as the user turn, generation prompt
    assert text == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        f"<|im_start|>user\n{instruction}<|im_end|>\n<|im_start|>assistant\n"
    )
    over = validate_config(
        _config(
            realistic_model_dir,
            tmp_path / "t.jsonl",
            model={"system_prompt": "Be brief.", "user_prompt": "Q: {question}"},
        )
    )
    assert prompt_string(tok, over, "x") == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nQ: x<|im_end|>\n<|im_start|>assistant\n"
    )
    plain = validate_config(_config(realistic_model_dir, tmp_path / "t.jsonl", model={"chat_template": False}))
    assert prompt_string(tok, plain, "x") == "question : x\n"  # a base model's prompt_template


def test_weights_load_in_the_dtype_asked(realistic_model_dir, tmp_path):
    for name, dtype in (("bfloat16", torch.bfloat16), ("float32", torch.float32)):
        config = validate_config(_config(realistic_model_dir, tmp_path / "t.jsonl", model={"dtype": name}))
        model, _ = load_for_config(realistic_model_dir, CPU, config, trainable=False)
        assert {p.dtype for p in model.parameters()} == {dtype}


# ---------------------------------------------------------------- masks from the core's segments


@needs_server
def test_masks_from_core_segments_are_exact_at_token_level(realistic_model_dir, tmp_path):
    config = validate_config(_config(realistic_model_dir, tmp_path / "t.jsonl"))
    _, tok = load_for_config(realistic_model_dir, CPU, config, trainable=False)
    records = _prepare_sft(_trajectories(tmp_path / "t.jsonl"), tmp_path / "sft.jsonl")
    straddled = 0
    for r in [r for r in records if r.tool_calls]:
        resp, segs = r.response, r.segments
        obs = [(s.start, s.end) for s in segs if s.kind == "observation"]
        assert obs
        # what the rule is for: tokenising the whole response would put a token across an observation's edge
        whole = tok(resp, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        straddled += sum(1 for a, b in whole for oa, ob in obs if a < oa < b or a < ob < b)
        sft2 = encode_trajectory(tok, [], resp, segs, frozenset({"observation"}), eos=False)
        sft3 = encode_trajectory(tok, [], resp, segs, frozenset(), eos=False)
        assert sft2.ids == sft3.ids  # the same tokens; only the masks differ
        assert tok.decode(sft2.ids) == resp  # lossless: every character is in exactly one token
        ends = sft2.offsets[1:] + [len(resp)]
        for i, (a, b) in enumerate(zip(sft2.offsets, ends)):
            inside = any(oa <= a and b <= ob for oa, ob in obs)
            across = any(a < oa < b or a < ob < b for oa, ob in obs)
            assert not across, f"token {i} {tok.decode([sft2.ids[i]])!r} straddles an observation edge"
            assert sft2.loss_mask[i] == (0 if inside else 1), (i, tok.decode([sft2.ids[i]]))
            assert sft3.loss_mask[i] == 1
            assert (sft2.kinds[i] == "observation") == inside
    assert straddled > 0, "the data should exercise the boundary rule (`>\\n\\n` merges across the edge)"


# ---------------------------------------------------------------- stop strings, ids end to end


class Scripted(torch.nn.Module):
    """A causal LM stand-in that writes a fixed token sequence: the next token is script[len(context)] (EOS after
    its end), whatever the context — so if the loop fed back anything but the ids end to end, the result would
    no longer equal the script. Answers the generate() call signature of an HF model (logits, past_key_values)."""

    def __init__(self, script: list[int], vocab: int, eos: int):
        super().__init__()
        self.script, self.vocab, self.eos = script, vocab, eos

    def forward(self, input_ids, attention_mask, position_ids=None, past_key_values=None, use_cache=True):
        from types import SimpleNamespace

        lengths = attention_mask.sum(-1).tolist()
        logits = torch.full((input_ids.shape[0], input_ids.shape[1], self.vocab), -1e4)
        for i, n in enumerate(lengths):
            logits[i, -1, self.script[n] if n < len(self.script) else self.eos] = 0.0
        return SimpleNamespace(logits=logits, past_key_values=None)


def test_stop_on_closing_tag_string_however_tokenised(realistic_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(realistic_model_dir))
    stops = StringStops(tok, ["</search>"])
    for text in ["<search> q </search>", "<search> q </search>\n\n", "<search> q</search>\nmore"]:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        pieces = [tok.decode([i]) for i in ids]
        hits = [stops.hit(ids[: k + 1]) for k in range(len(ids))]
        first = hits.index(True)
        assert tok.decode(ids[: first + 1]).find("</search>") >= 0 > tok.decode(ids[:first]).find("</search>"), pieces
    # split over three tokens and merged with the newlines after it: one of each in these texts
    assert [tok.decode([i]) for i in tok("</search>", add_special_tokens=False)["input_ids"]] == ["</", "search", ">"]
    assert ">\n\n" in [tok.decode([i]) for i in tok(" </search>\n\n", add_special_tokens=False)["input_ids"]]
    # generate() stops right there (with the merged token included) while another row runs on
    prompt = tok("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]
    turn = tok("<think> go </think>\n<search> Evan Morris </search>\n\n", add_special_tokens=False)["input_ids"]
    tail = tok("<think> more text that goes on and on", add_special_tokens=False)["input_ids"]
    model = Scripted(prompt + turn + tail, len(tok), tok.eos_token_id)
    out, _, stopped = generate(
        model, [prompt, prompt], 40, {tok.eos_token_id}, tok.pad_token_id, CPU.device, stop_strings=stops
    )
    assert out[0] == turn and stopped == [True, True]


def test_rollout_keeps_ids_end_to_end_with_text_tags(realistic_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(realistic_model_dir))
    t = tags("search-r1")
    io = AgentIO.make(tok, t)
    prompt = tok("<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]
    turn1 = tok("<think> search. </think>\n<search> Evan Morris lobbyist </search>\n\n", add_special_tokens=False)[
        "input_ids"
    ]
    observation = 'Doc 1(Title: "Evan Morris") Evan Morris was a lobbyist for Genentech.'
    obs_ids, _ = io.observation_ids(observation, 64)
    turn2 = tok("\n\n<think> done </think>\n<answer> Genentech </answer>", add_special_tokens=False)["input_ids"]
    script = prompt + turn1 + obs_ids + turn2 + [tok.eos_token_id]
    model = Scripted(script, len(tok), tok.eos_token_id)
    seen: list[str] = []

    def tool(queries):
        seen.extend(queries)
        return [observation] * len(queries)

    (tr,) = rollout(
        model,
        tok,
        [prompt],
        t,
        tool,
        max_turns=2,
        max_new_tokens=40,
        max_obs_tokens=64,
        max_len=1024,
        device=CPU.device,
        dtype=None,
        io=io,
    )
    assert seen == ["Evan Morris lobbyist"]
    assert tr.prompt_ids + tr.ids == script[: len(tr.prompt_ids) + len(tr.ids)]
    assert tr.ids[: len(turn1)] == turn1 and tr.ids[len(turn1) : len(turn1) + len(obs_ids)] == obs_ids
    assert tr.loss_mask == [1] * len(turn1) + [0] * len(obs_ids) + [1] * (len(tr.ids) - len(turn1) - len(obs_ids))
    assert tr.finished and not tr.truncated and len(tr.contexts) == 2
    assert not retok_mismatch(tr)  # every turn's context is a prefix of the trained ids
    # a decode → re-encode loop would have trained on other ids: byte-level BPE merges across the seams
    assert retok_drift(tok, tr.ids)


def test_hermes_calls_search_the_query_argument(realistic_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(realistic_model_dir))
    io = AgentIO.make(tok, tags("hermes"))
    call = '<tool_call>{"name": "search", "arguments": {"query": "Evan Morris"}}</tool_call>'
    assert io.query(tok(call, add_special_tokens=False)["input_ids"], 0) == "Evan Morris"
    broken = "<tool_call>Evan Morris lobbyist</tool_call>"  # not JSON: searched as written, graded as malformed
    assert io.query(tok(broken, add_special_tokens=False)["input_ids"], 0) == "Evan Morris lobbyist"


def test_simulated_observation_stops_on_the_closing_tag_string(realistic_model_dir):
    """RL-1 with text tags: the policy writes the observation after `<information>` until `</information>` (a
    string, several tokens), mask 0; then its next turn goes on from the same ids."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(realistic_model_dir))
    t = tags("search-r1")
    io = AgentIO.make(tok, t)
    prompt = tok("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]
    turn1 = tok("<search> Evan Morris </search>\n\n", add_special_tokens=False)["input_ids"]
    written = tok("Doc 1 Evan Morris was a lobbyist.</information>\n\n", add_special_tokens=False)["input_ids"]
    turn2 = tok("<answer> lobbyist </answer>", add_special_tokens=False)["input_ids"]
    script = prompt + turn1 + io.obs_open_ids() + written + turn2
    (tr,) = rollout(
        Scripted(script, len(tok), tok.eos_token_id),
        tok,
        [prompt],
        t,
        None,
        max_turns=2,
        max_new_tokens=40,
        max_obs_tokens=40,
        max_len=1024,
        device=CPU.device,
        dtype=None,
        io=io,
    )
    n_obs = len(io.obs_open_ids()) + len(written)
    assert tr.simulated and tr.finished and tr.prompt_ids + tr.ids == script
    assert tr.loss_mask == [1] * len(turn1) + [0] * n_obs + [1] * len(turn2)
    assert not retok_mismatch(tr) and len(tr.contexts) == 3  # turn 1, the observation, turn 2


def test_eval_runs_the_rl_loop_with_evals_own_limits(realistic_model_dir, tmp_path):
    """Eval (and the workflow baseline) sample through rollout.rollout with eval.max_obs_tokens / eval.max_len —
    no separate loop with its own hard-coded limits."""
    from transformers import AutoTokenizer

    import coa_trainer.evaluation.baselines as baselines
    import coa_trainer.evaluation.agent as evaluate
    import coa_trainer.rollout.loop as rollout_mod

    assert evaluate.rollout is rollout_mod.rollout and baselines.eval_rollout is evaluate.eval_rollout
    assert not hasattr(importlib.import_module("coa_trainer.rollout.generate"), "rollout")
    tok = AutoTokenizer.from_pretrained(str(realistic_model_dir))
    config = validate_config(_config(realistic_model_dir, tmp_path / "t.jsonl", eval={"max_obs_tokens": 5}))
    io = AgentIO.make(tok, tags("search-r1"))
    prompt = tok("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]
    turn1 = tok("<search> Evan Morris </search>\n\n", add_special_tokens=False)["input_ids"]
    observation = 'Doc 1(Title: "Evan Morris") Evan Morris was a lobbyist for Genentech and Roche.'
    obs_ids, cut = io.observation_ids(observation, 5)
    assert cut and len(obs_ids) < len(io.observation_ids(observation, 500)[0])
    turn2 = tok("<answer> Genentech </answer>", add_special_tokens=False)["input_ids"]
    model = Scripted(prompt + turn1 + obs_ids + turn2, len(tok), tok.eos_token_id)
    (tr,) = evaluate.eval_rollout(model, tok, config, [prompt], lambda qs: [observation] * len(qs), CPU, io)
    assert tr.ids == turn1 + obs_ids + turn2 and tr.truncated  # the observation was cut at eval.max_obs_tokens
    short = validate_config(
        _config(realistic_model_dir, tmp_path / "t.jsonl", eval={"max_len": len(prompt) + len(turn1) + 2})
    )
    (tr,) = evaluate.eval_rollout(model, tok, short, [prompt], lambda qs: [observation] * len(qs), CPU, io)
    assert len(tr.prompt_ids) + len(tr.ids) == short.eval.max_len and tr.truncated and not tr.finished


# ---------------------------------------------------------------- every stage, a few steps


@needs_server
def test_sft123_and_rl2_on_parquet_questions_and_the_search_r1_corpus(realistic_model_dir, tmp_path, write_config):
    traj = _trajectories(tmp_path / "traj.jsonl")
    cfg = write_config(_config(realistic_model_dir, traj))
    run = tmp_path / "run"
    for stage in ("sft1", "sft2", "sft3", "rl2"):
        r = run_trainer("train", "--stage", stage, "--config", str(cfg), "--run-dir", str(run), timeout=600)
        assert r.returncode == 0, r.stdout[-4000:]
        final = json.loads((run / "stages" / stage / "final" / "config.json").read_text())
        assert final["vocab_size"] == 1200  # no tokens added, no resize, stage after stage
    events = read_events(run)
    assert not [e for e in events if e["type"] == "error"]
    logs = [e["message"] for e in events if e["type"] == "log"]
    assert any(
        "sft1:" in m and "tags as text" in m and "pairs from your data (notool-vs-tool 3, tool-vs-tool 3;" in m
        for m in logs
    )
    # SFT-2 samples: observation tokens 0; SFT-3: 1 — read back from what the trainer emitted
    for stage, obs_mask in (("sft2", 0), ("sft3", 1)):
        samples = [e["record"] for e in events if e["type"] == "sample" and e["stage"] == stage]
        assert samples
        for rec in samples:
            assert rec["response"].startswith("<think>")
            toks = rec["tokens"]
            resp = rec["response"]
            obs = (
                [(resp.index("<information>"), resp.index("</information>") + len("</information>"))]
                if "<information>" in resp
                else []
            )
            for off, m in zip(toks["offsets"], toks["loss_mask"]):
                if any(a <= off < b for a, b in obs):
                    assert m == obs_mask
                else:
                    assert m == 1
    rl = [e["values"] for e in events if e["type"] == "metrics" and e["stage"] == "rl2"]
    assert len(rl) == 2 and all(v["retok_mismatches"] == 0 for v in rl)
    rollouts = [json.loads(x) for x in (run / "stages" / "rl2" / "rollouts.coa.jsonl").read_text().splitlines()]
    assert rollouts and all(r["dialect"] == "search-r1" and r["golden_answers"] for r in rollouts)
    prompts = [e for e in events if e["type"] == "eval" and e["stage"] == "rl2"]
    assert prompts and prompts[0]["metrics"]["questions"] == 2.0


@needs_server
def test_bad_user_data_stops_before_training_with_file_line_field(realistic_model_dir, tmp_path, write_config):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "a", "golden_answers": ["b"]}\n{"question": "c", "golden_answers": [3]}\n')
    cfg = write_config(_config(realistic_model_dir, tmp_path / "t.jsonl", data={"questions": {"train": str(bad)}}))
    r = run_trainer("train", "--stage", "rl2", "--config", str(cfg), "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 2
    (err,) = [e for e in read_events(tmp_path / "run") if e["type"] == "error"]
    assert err["code"] == "bad_data" and err["message"].startswith(f"{bad}:2:") and "golden_answers.0" in err["message"]
    assert not (tmp_path / "run" / "stages" / "rl2").exists()


@needs_server
def test_bad_corpus_line_stops_rl_before_training(realistic_model_dir, tmp_path, write_config):
    """The environment server skips a corpus line that is not JSON; the stage checks data.corpus through the core
    first and stops with the core's FILE:LINE error."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(CORPUS.read_text(encoding="utf-8").splitlines()[0] + "\nnot json\n", encoding="utf-8")
    cfg = write_config(_config(realistic_model_dir, tmp_path / "t.jsonl", data={"corpus": str(corpus)}))
    r = run_trainer("train", "--stage", "rl2", "--config", str(cfg), "--run-dir", str(tmp_path / "run"))
    assert r.returncode == 2
    (err,) = [e for e in read_events(tmp_path / "run") if e["type"] == "error"]
    assert err["code"] == "bad_data" and err["message"].startswith(f"{corpus}:2:1: error:")
