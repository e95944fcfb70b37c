"""The CoA reward under verl's own reward managers (verl_b178a3cd/: verl's code, copied verbatim at the commit
docs/integrations.md pins, because verl itself needs Ray to import), against the real environment server.

A reward that needs a question's whole group (OTC-GRPO) is exact under the batch manager — the same numbers as the
core's vectors (test/conformance/rewards.json) and as the TRL path, whatever the order of the batch and however many
threads call it — and refused by the managers that hand it one sample at a time (naive, the reward loop), which
would otherwise give a running minimum in arrival order."""

import asyncio
import json
import random
import threading

import pytest
import torch

from conftest import REPO, needs_env_server
from coa_trainer.env.client import EnvClient
from coa_trainer.integrations import grader, verl_reward
from verl_b178a3cd.protocol import rollout_batch
from verl_b178a3cd.reward import get_custom_reward_fn
from verl_b178a3cd.reward_loop import NaiveRewardManager as LoopNaiveRewardManager
from verl_b178a3cd.reward_loop import RewardLoopWorker
from verl_b178a3cd.workers import BatchRewardManager, NaiveRewardManager

pytestmark = needs_env_server()

CORPUS = REPO / "examples" / "data" / "search-r1" / "corpus_example.jsonl"
MODULE = REPO / "src" / "trainer" / "coa_trainer" / "integrations" / "verl_reward.py"
AUTOCOA_TEST = REPO / "examples" / "data" / "autocoa" / "all_test.parquet"
VECTORS = json.loads((REPO / "test" / "conformance" / "rewards.json").read_text())["cases"]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    client = EnvClient.start(CORPUS, dialect="search-r1", extra_args=["--index", str(tmp_path_factory.mktemp("idx"))])
    yield client
    client.stop()


@pytest.fixture
def env_url(env, monkeypatch):
    monkeypatch.setenv("COA_ENV_URL", f"{env.url}/t/{env.token}")
    for name in ("COA_ENV_TOKEN", "COA_REWARD_SCHEME", "COA_REWARD_PARAMS", "COA_REWARD_RUN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(grader, "_client", None)
    return env


@pytest.fixture(scope="module")
def tok(realistic_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(realistic_model_dir)


def reward_fn(path: str = str(MODULE), **reward_kwargs):
    """The reward as verl loads it from `custom_reward_function` (a file path or `pkg://`)."""
    return get_custom_reward_fn(
        {"custom_reward_function": {"path": path, "name": "compute_score", "reward_kwargs": reward_kwargs}}
    )


def scores(result: dict, data) -> list[float]:
    """Each sample's reward from a manager's reward tensor (at its last response token, as verl places it)."""
    plen = data.batch["prompts"].shape[-1]
    lengths = data.batch["attention_mask"][:, plen:].sum(dim=-1)
    return [float(result["reward_tensor"][i, int(lengths[i]) - 1]) for i in range(len(lengths))]


# ------------------------------------------------------------------ AutoCoA's parquet, groups of 8 as GRPO makes them
def boxed(answer: str, searches: int) -> str:
    steps = "".join(
        f"<begin_search> query {k} </end_search>\n<search_result> text </search_result>\n" for k in range(searches)
    )
    return f"Let me think.\n{steps}So.\n</think>\n\nThe answer is \\boxed{{{answer}}}."


# (searches, correct) for 8 samples of each of 4 questions: fewest calls among correct answers 2, 0, none, 1 — never
# first in its group, so a running minimum in arrival order gives other numbers
PLAN = [
    [(3, True), (3, True), (4, True), (1, False), (2, True), (0, False), (2, True), (5, True)],
    [(1, True), (2, True), (2, False), (0, True), (0, False), (3, True), (1, True), (0, True)],
    [(1, False), (0, False), (2, False), (3, False), (1, False), (0, False), (4, False), (2, False)],
    [(2, True), (3, False), (2, True), (1, True), (4, True), (1, False), (6, True), (1, True)],
]


@pytest.fixture(scope="module")
def autocoa_groups():
    """4 questions of AutoCoA's test parquet as verl's RLHFDataset reads them (extra_info = {index, split}, numpy
    arrays for lists) and 8 answers to each."""
    import pandas as pd

    df = pd.read_parquet(AUTOCOA_TEST)
    rows, responses = [], []
    for i, plan in enumerate(PLAN):
        row = df.iloc[i]
        gold = list(row["reward_model"]["ground_truth"])
        rows.append(
            {
                "prompt": row["prompt"][-1]["content"],
                "data_source": row["data_source"],
                "reward_model": dict(row["reward_model"]),
                "extra_info": dict(row["extra_info"]),
                "question": row["prompt"][-1]["content"],
                "golden": gold,
            }
        )
        responses.append([boxed(gold[0] if ok else "nobody at all", m) for m, ok in plan])
    return rows, responses


def trl_totals(env, tmp_path, rows, responses, run):
    """The same answers through the TRL path: CoaRun's reward called with TRL's arguments for one step."""
    from coa_trainer.integrations.trl import CoaRun

    coa = CoaRun(tmp_path / "trl", scheme="otc-grpo", env=env, run_id=run)
    prompts = [[{"role": "user", "content": r["prompt"]}] for r, texts in zip(rows, responses) for _ in texts]
    completions = [[{"role": "assistant", "content": t}] for texts in responses for t in texts]
    golden = [r["golden"] for r, texts in zip(rows, responses) for _ in texts]
    return coa.reward(prompts=prompts, completions=completions, golden_answers=golden)


def test_otc_grpo_batch_manager_is_order_and_thread_independent_and_equals_trl(env_url, tok, autocoa_groups, tmp_path):
    rows, responses = autocoa_groups
    want = trl_totals(env_url, tmp_path, rows, responses, "trl-same-answers")
    fn = reward_fn(scheme="otc-grpo", run="verl-batch-threads")
    manager = BatchRewardManager(tok, num_examine=0, compute_score=fn)
    data = rollout_batch(tok, rows, responses)
    result = manager(data, return_dict=True)
    got = scores(result, data)
    assert got == pytest.approx(want, abs=1e-6)
    # what OTC-GRPO means on these groups: n per question from its own correct answers
    assert result["reward_extra_info"]["optimal_tool_calls"] == [2] * 8 + [0] * 8 + [-1] * 8 + [1] * 8
    assert got[8 * 3] == got[8 * 3 + 2] == pytest.approx(0.866025403784)  # correct in 2 calls where 1 was enough
    assert got[4] == got[6] == 1.0 and got[0] == got[1] < 1.0  # equal answers, equal rewards
    assert sum(got[16:24]) == 0.0

    n = len(got)
    base = rollout_batch(tok, rows, responses)
    rng = random.Random(0)
    errors: list[str] = []
    for trial in range(100):
        # a fresh run each trial: no minimum kept from an earlier call, 8 threads grading into the same new state
        manager = BatchRewardManager(
            tok,
            num_examine=0,
            compute_score=reward_fn(
                path="pkg://coa_trainer.integrations.verl_reward", scheme="otc-grpo", run=f"verl-threads-{trial}"
            ),
        )
        orders = []
        for _ in range(8):
            perm = list(range(n))
            rng.shuffle(perm)
            orders.append(perm)

        def grade(perm, trial=trial, manager=manager):
            shuffled = base.copy()
            shuffled.reorder(torch.tensor(perm))  # as trainer.balance_batch reorders a batch before its reward
            out = scores(manager(shuffled, return_dict=True), shuffled)
            back = [0.0] * n
            for pos, original in enumerate(perm):
                back[original] = out[pos]
            if back != got:
                errors.append(f"trial {trial}: {back} != {got}")

        threads = [threading.Thread(target=grade, args=(p,)) for p in orders]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[:3]


@pytest.mark.parametrize("case", [c for c in VECTORS if c["scheme"] == "otc-grpo"], ids=lambda c: c["name"][:40])
def test_otc_grpo_batch_manager_gives_the_cores_vectors(env_url, tok, case):
    """Each conformance case as one verl batch: a dataset row per question (named by data_source/split/index, as
    verl's reward call names it), the case's answers to it as that row's samples."""
    questions = list(dict.fromkeys((r.get("meta") or {}).get("question_key") or r["question"] for r in case["records"]))
    rows = [
        {
            "prompt": f"Question {i}",
            "data_source": "conformance",
            "extra_info": {"index": i, "split": "test"},
            "reward_model": {"ground_truth": None, "style": "rule"},
        }
        for i in range(len(questions))
    ]
    responses: list[list[str]] = [[] for _ in questions]
    where = []
    for r in case["records"]:
        q = questions.index((r.get("meta") or {}).get("question_key") or r["question"])
        rows[q]["reward_model"]["ground_truth"] = r["golden_answers"]
        where.append((q, len(responses[q])))
        responses[q].append(r["response"])
    data = rollout_batch(tok, rows, responses)
    for i, text in enumerate(t for texts in responses for t in texts):  # verl decodes the tokens it generated
        plen = data.batch["prompts"].shape[-1]
        length = int(data.batch["attention_mask"][i, plen:].sum())
        assert tok.decode(data.batch["responses"][i][:length], skip_special_tokens=True) == text
    fn = reward_fn(scheme="otc-grpo", params=case["params"], run=f"verl-vectors-{VECTORS.index(case)}")
    result = BatchRewardManager(tok, num_examine=0, compute_score=fn)(data, return_dict=True)
    got, extra = scores(result, data), result["reward_extra_info"]
    offsets = [sum(len(t) for t in responses[:q]) for q in range(len(responses))]
    for (q, k), expect in zip(where, case["expect"]):
        i = offsets[q] + k
        assert got[i] == pytest.approx(expect["total"], abs=1e-6)
        n = expect["optimal_tool_calls"]
        assert extra["optimal_tool_calls"][i] == (-1 if n is None else n)
        assert extra["r_tool"][i] == pytest.approx(expect["r_tool"], abs=1e-9)
        assert extra["tool_calls"][i] == expect["tool_calls"] and extra["em"][i] == expect["em"]


def test_a_batch_too_big_for_one_request_is_sent_in_whole_questions(env_url, tok, autocoa_groups, monkeypatch):
    rows, responses = autocoa_groups
    fn = reward_fn(path="pkg://coa_trainer.integrations.verl_reward", scheme="otc-grpo", run="verl-batch-parts")
    manager = BatchRewardManager(tok, num_examine=0, compute_score=fn)
    data = rollout_batch(tok, rows, responses)
    whole = scores(manager(data, return_dict=True), data)
    requests = []
    real_grade = EnvClient.grade

    def counted(self, records, *a, **kw):
        requests.append(len(records))
        return real_grade(self, records, *a, **kw)

    monkeypatch.setattr(EnvClient, "grade", counted)
    monkeypatch.setattr(verl_reward, "REQUEST_BUDGET_BYTES", 2000)  # about one question's 8 answers
    data = rollout_batch(tok, rows, responses)
    data.reorder(torch.tensor(list(range(31, -1, -1))))
    parts = scores(manager(data, return_dict=True), data)
    assert len(requests) > 1 and all(n % 8 == 0 for n in requests), requests
    assert parts[::-1] == whole


def test_per_sample_managers_refuse_a_group_reward_at_the_first_call(env_url, tok, autocoa_groups):
    rows, responses = autocoa_groups
    fn = reward_fn(scheme="otc-grpo", run="verl-naive")
    calls = []

    def counted(**kw):
        calls.append(kw)
        return fn(**kw)

    with pytest.raises(verl_reward.RewardCallError, match=r"reward_model\.reward_manager=batch.*use_reward_loop=False"):
        NaiveRewardManager(tok, num_examine=0, compute_score=counted)(rollout_batch(tok, rows, responses))
    assert len(calls) == 1
    # without a run id as well, the manager is what is said first: no run id would make a per-sample call exact
    with pytest.raises(verl_reward.RewardCallError, match=r"reward_model\.reward_manager=batch"):
        NaiveRewardManager(tok, num_examine=0, compute_score=reward_fn(scheme="otc-grpo"))(
            rollout_batch(tok, rows, responses)
        )

    async def reward_loop(compute_score):
        worker = RewardLoopWorker(LoopNaiveRewardManager(None, tok, compute_score), str(MODULE))
        return await worker.compute_score_batch(rollout_batch(tok, rows, responses))

    with pytest.raises(verl_reward.RewardCallError, match="otc-ppo"):
        asyncio.run(reward_loop(fn))

    # a per-sample scheme goes through both, with the batch manager's numbers
    em = reward_fn(path="pkg://coa_trainer.integrations.verl_reward", scheme="em")
    data = rollout_batch(tok, rows, responses)
    want = scores(BatchRewardManager(tok, num_examine=0, compute_score=em)(data, return_dict=True), data)
    data = rollout_batch(tok, rows, responses)
    assert scores(NaiveRewardManager(tok, num_examine=0, compute_score=em)(data, return_dict=True), data) == want
    looped = asyncio.run(reward_loop(em))
    assert [o["reward_score"] for o in looped] == want
    assert sum(want) == 3 * 8 - 2 - 2 - 2  # the correct answers


def test_otc_grpo_without_its_run_is_refused_not_plain_em(env_url, tok, autocoa_groups, monkeypatch):
    rows, responses = autocoa_groups
    manager = BatchRewardManager(tok, num_examine=0, compute_score=reward_fn(scheme="otc-grpo"))
    with pytest.raises(verl_reward.RewardCallError, match=r"reward_kwargs\.run=<run id>.*COA_REWARD_RUN"):
        manager(rollout_batch(tok, rows, responses))
    monkeypatch.setenv("COA_REWARD_RUN", "verl-from-env")
    data = rollout_batch(tok, rows, responses)
    assert scores(manager(data, return_dict=True), data)[1] < 1.0  # a 3-call answer where 2 were enough
