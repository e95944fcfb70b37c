"""verl against the real environment server, without verl (its packages cannot train without GPUs): the reward
module loaded and called exactly as verl loads and calls a custom reward, and the search tool's retrieval request.

Sources (volcengine/verl b178a3cd56f58b2d502255daba591e92833930a7):
- verl/utils/import_utils.py `load_module`: a file path is loaded with importlib.util.spec_from_file_location
- verl/trainer/ppo/reward.py `get_custom_reward_fn` / `_call_with_kwargs`: reward_kwargs merged over the call's kwargs
- verl/workers/reward_manager/naive.py `NaiveRewardManager.__call__`: compute_score(data_source=, solution_str=,
  ground_truth=, extra_info=) with extra_info["num_turns"] and ["rollout_reward_scores"] set; a dict result gives
  result["score"] and appends every key to reward_extra_info
- verl/trainer/ppo/ray_trainer.py `_dump_generations`: json.dumps of each row with those keys
- verl/tools/utils/search_r1_like_utils.py `call_search_api`: POST {"queries", "topk", "return_scores": True} with
  Content-Type/Accept JSON headers and no Authorization, reads result[i][j]["document"]["contents"]"""

import importlib.util
import json
import subprocess
import urllib.request
from collections import defaultdict
from functools import partial

import pytest

from conftest import REPO, env_server_available
from coa_trainer.env.client import EnvClient, EnvError
from coa_trainer.integrations import grader

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


def _load_like_verl(reward_kwargs: dict):
    spec = importlib.util.spec_from_file_location("custom_module_verl_reward", str(MODULE))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function_name = "compute_score"  # verl's custom_reward_function.name (its default)
    raw_fn = getattr(module, function_name)

    def _call_with_kwargs(raw_fn, extra_kwargs, *args, **kwargs):
        return raw_fn(*args, **{**kwargs, **extra_kwargs})

    return partial(_call_with_kwargs, raw_fn, reward_kwargs)


def _naive_manager(compute_score, rows, extra_infos=None, data_source="searchR1_nq"):
    """The loop of NaiveRewardManager.__call__ after decoding: one call per sample, keyword arguments only. extra_info
    is the dataset row's own (Search-R1's and AutoCoA's parquets: `{index, split}`), plus the two keys verl adds."""
    rewards, reward_extra_info = [], defaultdict(list)
    for i, row in enumerate(rows):
        extra_info = dict(extra_infos[i]) if extra_infos else {"index": i, "split": "train"}
        extra_info["num_turns"] = 4
        extra_info["rollout_reward_scores"] = {}
        score = compute_score(data_source=data_source, solution_str=row["output"], ground_truth=row["gts"],
                              extra_info=extra_info)
        assert isinstance(score, dict)
        rewards.append(score["score"])
        for key, value in score.items():
            reward_extra_info[key].append(value)
    return rewards, reward_extra_info




def test_reward_as_verl_calls_it(env_url, tmp_path):
    fn = _load_like_verl({})
    rewards, extra = _naive_manager(fn, ROWS)
    keys = {"score", "em", "f1", "format_ok", "format_codes", "tool_calls", "optimal_tool_calls", "r_tool",
            "r_correct", "scheme"}
    assert set(extra) == keys and all(len(v) == len(ROWS) for v in extra.values())
    for key, values in extra.items():
        assert all(isinstance(v, str) for v in values) or all(isinstance(v, (int, float)) for v in values), key
    assert extra["format_ok"] == [0 if "COA" in c else 1 for c in extra["format_codes"]]
    # _dump_generations writes them (json.dumps of each row) and validation averages every numeric key
    for i in range(len(ROWS)):
        json.dumps({k: v[i] for k, v in extra.items()}, ensure_ascii=False)
    # the same totals as the core's `coa score`, written to a file the CLI reads
    f = tmp_path / "same.coa.jsonl"
    f.write_text("\n".join(json.dumps({"id": f"r{i}", "question": "", "golden_answers": r["gts"]["target"],
                                       "response": r["output"]}) for i, r in enumerate(ROWS)) + "\n")
    out = subprocess.run(["node", str(REPO / "bin" / "coa.js"), "score", str(f), "--scheme", "em", "-o",
                          str(tmp_path / "scored.jsonl")], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    want = [json.loads(line)["reward"]["total"] for line in (tmp_path / "scored.jsonl").read_text().splitlines()]
    assert rewards == want
    assert 0 < sum(rewards) < len(rewards)  # the fixture mixes right, wrong and malformed answers


def test_reward_kwargs_pick_the_scheme(env_url):
    fn = _load_like_verl({"scheme": "otc-grpo", "params": {"c": 2}, "run": "verl-test-otc"})
    _, extra = _naive_manager(fn, ROWS)
    assert set(extra["scheme"]) == {"otc-grpo"}
    assert any(n >= 0 for n in extra["optimal_tool_calls"])  # the running minimum kept by the server for this run
    assert any(r < 1.0 for r in extra["r_tool"])  # extra searches cost


def test_otc_grpo_minimum_is_per_question_on_autocoa_parquet_rows(env_url):
    """AutoCoA's published test parquet, read as verl's RLHFDataset reads it (pandas/pyarrow rows: numpy arrays,
    `extra_info` = {index, split}); a group of samples per question as GRPO makes them. A correct two-search answer to
    one question is optimal for that question whatever another question needed: score 1.0, not cos(π/4) = 0.707."""
    import pandas as pd

    df = pd.read_parquet(AUTOCOA_TEST)
    a, b = df.iloc[0], df.iloc[1]
    assert set(a["extra_info"]) == {"index", "split"}  # no question text reaches the reward function

    def boxed(answer: str, searches: int) -> str:
        steps = "".join(f"<begin_search> query {k} </end_search>\n<search_result> text </search_result>\n"
                        for k in range(searches))
        return f"Let me think.\n{steps}So.\n</think>\n\nThe answer is \\boxed{{{answer}}}."

    gold_a, gold_b = list(a["reward_model"]["ground_truth"]), list(b["reward_model"]["ground_truth"])
    rows = [{"output": boxed(gold_a[0], 0), "gts": a["reward_model"]["ground_truth"]},
            {"output": boxed(gold_b[0], 2), "gts": b["reward_model"]["ground_truth"]},
            {"output": boxed(gold_b[0], 3), "gts": b["reward_model"]["ground_truth"]}]
    fn = _load_like_verl({"scheme": "otc-grpo", "run": "verl-test-otc-keys"})
    rewards, extra = _naive_manager(fn, rows, [a["extra_info"], b["extra_info"], b["extra_info"]],
                                    data_source=a["data_source"])
    assert extra["em"] == [1.0, 1.0, 1.0] and extra["format_codes"] == ["", "", ""]
    assert extra["optimal_tool_calls"] == [0, 2, 2]
    assert rewards[:2] == [1.0, 1.0]
    assert rewards[2] == pytest.approx(0.951056516295)  # m=3, n=2: sin(2.4π/4)
    # the same question in the next step keeps its own minimum (the server's running state for this run)
    rewards, extra = _naive_manager(fn, rows[2:], [b["extra_info"]], data_source=a["data_source"])
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
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        body = json.loads(resp.read())
    first, empty = body["result"]
    assert empty == []
    assert first and all(set(d) == {"document", "score"} and set(d["document"]) == {"id", "contents"} for d in first)
    title = first[0]["document"]["contents"].split("\n")[0]  # _passages2string's title line
    assert title == '"Evan Morris"'
    health = env._json("GET", "/v1/tool-health")["callers"]["verl-search"]
    assert health["calls"] >= 1 and health["empty_results"] >= 1 and health["failures"] == 0
