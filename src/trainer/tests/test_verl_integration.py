"""verl against the real environment server: the reward module loaded and called by verl's own code (verl_b178a3cd/:
copied verbatim at the pinned commit, as verl itself needs Ray to import), and the search tool's retrieval request.

Sources (volcengine/verl b178a3cd56f58b2d502255daba591e92833930a7):
- verl/utils/import_utils.py `load_module`, verl/trainer/ppo/reward.py `get_custom_reward_fn` / `_call_with_kwargs`:
  the module loaded from a file path, reward_kwargs merged over every call's kwargs (verl_b178a3cd/reward.py)
- verl/workers/reward_manager/naive.py and batch.py: one call per sample, or one per batch (verl_b178a3cd/workers.py);
  a dict result gives result["score"] and appends every key to reward_extra_info
- verl/trainer/ppo/ray_trainer.py `_dump_generations`: json.dumps of each row with those keys
- verl/tools/utils/search_r1_like_utils.py `call_search_api`: POST {"queries", "topk", "return_scores": True} with
  Content-Type/Accept JSON headers and no Authorization, reads result[i][j]["document"]["contents"]
The group rewards (OTC-GRPO) under every manager: test_verl_reward_managers.py."""

import json
import subprocess
import urllib.request

import pytest

from conftest import REPO, env_server_available
from coa_trainer.env.client import EnvClient, EnvError
from coa_trainer.integrations import grader
from verl_b178a3cd.protocol import rollout_batch
from verl_b178a3cd.reward import get_custom_reward_fn
from verl_b178a3cd.workers import BatchRewardManager, NaiveRewardManager

CORPUS = REPO / "examples" / "data" / "search-r1" / "corpus_example.jsonl"
MODULE = REPO / "src" / "trainer" / "coa_trainer" / "integrations" / "verl_reward.py"
DUMP = REPO / "test" / "fixtures" / "verl" / "rollouts" / "3.jsonl"
AUTOCOA_TEST = REPO / "examples" / "data" / "autocoa" / "all_test.parquet"
ROWS = [json.loads(line) for line in DUMP.read_text().splitlines()]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    why = env_server_available()
    if why:
        pytest.skip(why)
    client = EnvClient.start(CORPUS, dialect="search-r1", extra_args=["--index", str(tmp_path_factory.mktemp("idx"))])
    yield client
    client.stop()


@pytest.fixture
def env_url(env, monkeypatch):
    """COA_ENV_URL as documented: the server with its token in the path (no separate token variable)."""
    monkeypatch.setenv("COA_ENV_URL", f"{env.url}/t/{env.token}")
    monkeypatch.delenv("COA_ENV_TOKEN", raising=False)
    monkeypatch.setattr(grader, "_client", None)
    return env


@pytest.fixture(scope="module")
def tok(realistic_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(realistic_model_dir)


def _load_like_verl(reward_kwargs: dict):
    """custom_reward_function.path=<this module's file>, name=compute_score, reward_kwargs, as verl loads it."""
    return get_custom_reward_fn(
        {"custom_reward_function": {"path": str(MODULE), "name": "compute_score", "reward_kwargs": reward_kwargs}}
    )


def _dump_batch(tok, rows, extra_infos=None, data_source="searchR1_nq"):
    """The dump's answers as a verl batch: one prompt per row (its `input`), extra_info the dataset row's own
    (Search-R1's and AutoCoA's parquets: `{index, split}`)."""
    dataset = [
        {
            "prompt": r.get("input", "question"),
            "data_source": data_source,
            "reward_model": {"ground_truth": r["gts"], "style": "rule"},
            "extra_info": dict(extra_infos[i]) if extra_infos else {"index": i, "split": "train"},
        }
        for i, r in enumerate(rows)
    ]
    return rollout_batch(tok, dataset, [[r["output"]] for r in rows])


def _run(manager, data):
    """(each sample's reward, reward_extra_info) from a manager, the reward read where verl puts it."""
    result = manager(data, return_dict=True)
    plen = data.batch["prompts"].shape[-1]
    lengths = data.batch["attention_mask"][:, plen:].sum(dim=-1)
    rewards = [float(result["reward_tensor"][i, int(n) - 1]) for i, n in enumerate(lengths)]
    return rewards, result["reward_extra_info"]


def test_reward_as_verl_calls_it(env_url, tok, tmp_path):
    fn = _load_like_verl({})
    rewards, extra = _run(NaiveRewardManager(tok, num_examine=0, compute_score=fn), _dump_batch(tok, ROWS))
    keys = {
        "score",
        "em",
        "f1",
        "format_ok",
        "format_codes",
        "tool_calls",
        "optimal_tool_calls",
        "r_tool",
        "r_correct",
        "scheme",
    }
    assert set(extra) == keys and all(len(v) == len(ROWS) for v in extra.values())
    for key, values in extra.items():
        assert all(isinstance(v, str) for v in values) or all(isinstance(v, (int, float)) for v in values), key
    assert extra["format_ok"] == [0 if "COA" in c else 1 for c in extra["format_codes"]]
    # _dump_generations writes them (json.dumps of each row) and validation averages every numeric key
    for i in range(len(ROWS)):
        json.dumps({k: v[i] for k, v in extra.items()}, ensure_ascii=False)
    # the same totals as the core's `coa score`, written to a file the CLI reads
    f = tmp_path / "same.coa.jsonl"
    f.write_text(
        "\n".join(
            json.dumps({"id": f"r{i}", "question": "", "golden_answers": r["gts"]["target"], "response": r["output"]})
            for i, r in enumerate(ROWS)
        )
        + "\n"
    )
    out = subprocess.run(
        ["node", str(REPO / "bin" / "coa.js"), "score", str(f), "--scheme", "em", "-o", str(tmp_path / "scored.jsonl")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    want = [json.loads(line)["reward"]["total"] for line in (tmp_path / "scored.jsonl").read_text().splitlines()]
    assert rewards == want
    assert 0 < sum(rewards) < len(rewards)  # the fixture mixes right, wrong and malformed answers
    # the batch manager gives the same numbers for a per-sample scheme
    assert _run(BatchRewardManager(tok, num_examine=0, compute_score=fn), _dump_batch(tok, ROWS))[0] == rewards


def test_reward_kwargs_pick_the_scheme(env_url, tok):
    fn = _load_like_verl({"scheme": "otc-ppo", "params": {"c": 2}})  # the per-sample OTC reward
    _, extra = _run(NaiveRewardManager(tok, num_examine=0, compute_score=fn), _dump_batch(tok, ROWS))
    assert set(extra["scheme"]) == {"otc-ppo"}
    assert any(r < 1.0 for r, m in zip(extra["r_tool"], extra["tool_calls"]) if m > 0)  # searches cost
    fn = _load_like_verl({"scheme": "otc-grpo", "params": {"c": 2}, "run": "verl-test-otc"})
    _, extra = _run(BatchRewardManager(tok, num_examine=0, compute_score=fn), _dump_batch(tok, ROWS))
    assert set(extra["scheme"]) == {"otc-grpo"}
    assert any(n >= 0 for n in extra["optimal_tool_calls"])  # the fewest calls among a question's correct answers


def test_otc_grpo_minimum_is_per_question_on_autocoa_parquet_rows(env_url, tok):
    """AutoCoA's published test parquet, read as verl's RLHFDataset reads it (pandas/pyarrow rows: numpy arrays,
    `extra_info` = {index, split}); a group of samples per question as GRPO makes them. A correct two-search answer to
    one question is optimal for that question whatever another question needed: score 1.0, not cos(π/4) = 0.707."""
    import pandas as pd

    df = pd.read_parquet(AUTOCOA_TEST)
    a, b = df.iloc[0], df.iloc[1]
    assert set(a["extra_info"]) == {"index", "split"}  # no question text reaches the reward function

    def boxed(answer: str, searches: int) -> str:
        steps = "".join(
            f"<begin_search> query {k} </end_search>\n<search_result> text </search_result>\n" for k in range(searches)
        )
        return f"Let me think.\n{steps}So.\n</think>\n\nThe answer is \\boxed{{{answer}}}."

    def row(r):
        return {
            "prompt": r["prompt"][-1]["content"],
            "data_source": r["data_source"],
            "reward_model": dict(r["reward_model"]),
            "extra_info": dict(r["extra_info"]),
        }

    gold_a, gold_b = list(a["reward_model"]["ground_truth"]), list(b["reward_model"]["ground_truth"])
    fn = _load_like_verl({"scheme": "otc-grpo", "run": "verl-test-otc-keys"})
    manager = BatchRewardManager(tok, num_examine=0, compute_score=fn)
    data = rollout_batch(tok, [row(a), row(b)], [[boxed(gold_a[0], 0)], [boxed(gold_b[0], 3), boxed(gold_b[0], 2)]])
    rewards, extra = _run(manager, data)
    assert extra["em"] == [1.0, 1.0, 1.0] and extra["format_codes"] == ["", "", ""]
    assert extra["optimal_tool_calls"] == [0, 2, 2]
    assert rewards[0] == rewards[2] == 1.0
    assert rewards[1] == pytest.approx(0.951056516295)  # m=3, n=2: sin(2.4π/4)
    # the same question in the next step keeps its own minimum (the server's running state for this run)
    rewards, extra = _run(manager, rollout_batch(tok, [row(b)], [[boxed(gold_b[0], 3)]]))
    assert extra["optimal_tool_calls"] == [2] and rewards == [pytest.approx(0.951056516295)]


def test_missing_server_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("COA_ENV_URL", raising=False)
    monkeypatch.setattr(grader, "_client", None)
    fn = _load_like_verl({})
    with pytest.raises(EnvError, match="COA_ENV_URL is not set"):
        fn(data_source="x", solution_str="<answer>a</answer>", ground_truth="a", extra_info={})


def test_search_tool_request_of_verl(env):
    """call_search_api's request, as sent: JSON body and headers, no Authorization, the token only in the URL."""
    url = f"{env.url}/t/{env.token}/verl-search/retrieve"
    payload = {"queries": ["Evan Morris lobbyist", "zzqnothing"], "topk": 3, "return_scores": True}
    req = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        body = json.loads(resp.read())
    first, empty = body["result"]
    assert empty == []
    assert first and all(set(d) == {"document", "score"} and set(d["document"]) == {"id", "contents"} for d in first)
    title = first[0]["document"]["contents"].split("\n")[0]  # _passages2string's title line
    assert title == '"Evan Morris"'
    health = env._json("GET", "/v1/tool-health")["callers"]["verl-search"]
    assert health["calls"] >= 1 and health["empty_results"] >= 1 and health["failures"] == 0
