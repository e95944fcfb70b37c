"""bench/fidelity's perturbation plumbing on one small seed: `--seeds 1 --threads 1,2` runs the whole (tiny) pipeline
once per thread count, each in its own directory with a config that differs only in `threads`, and reports every
claim per run and over the runs exactly as the runs' own result tables say. The research claims themselves are
not asserted (a tiny model trained for a few steps makes none of them): the ordering mechanics are — which links of
EM(no tool) < EM(workflow) < EM(SFT-1+2) ≤ EM(SFT+RL) a run breaks, the share of the gap OTC closes, the counts."""

import json
import os
import subprocess

import pytest
from conftest import PY, REPO, TINY, needs_env_server, merge

from coa_trainer.evaluation.claims import CLAIMS, RunTable, by_setting, chain_breaks, gap_closed, run_claims

needs_server = needs_env_server()

RL = {
    "steps": 2,
    "prompts_per_step": 2,
    "group_size": 2,
    "heldout_every": 0,
    "sample_every": 0,
    "max_new_tokens": 16,
    "max_turns": 2,
    "log_every": 1,
}
CONFIG = merge(
    TINY, {"benchmark": {"redundant_search_fraction": 0.75}, "stages": {"rl1": RL, "rl2": RL}, "eval": {"limit": 8}}
)


@needs_server
def test_seeds_times_thread_counts_report_each_claim_per_run(tmp_path):
    cfg = tmp_path / "tiny.run.json"
    cfg.write_text(json.dumps(CONFIG))
    run = tmp_path / "fid"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src" / "trainer"), "OMP_NUM_THREADS": "1"}
    r = subprocess.run(
        [
            PY,
            str(REPO / "bench" / "fidelity" / "run.py"),
            "--config",
            str(cfg),
            "--seeds",
            "1",
            "--threads",
            "1,2",
            "--split",
            "dev",
            "--run-dir",
            str(run),
            # every row of the table, without the stages no row is read from (each stage starts from the
            # latest earlier one): half the processes of the whole pipeline
            "--stages",
            "pretrain,sft2,rl2,rl2-otc,results",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]

    configs = {t: json.loads((run / f"threads-{t}.run.json").read_text()) for t in (1, 2)}
    assert configs[1]["threads"] == 1 and configs[2]["threads"] == 2
    assert {**configs[1], "threads": 0} == {**configs[2], "threads": 0}  # the thread count is the only perturbation

    doc = json.loads((run / "fidelity.json").read_text())
    assert [(x["seed"], x["threads"]) for x in doc["runs"]] == [(TINY["seed"], 1), (TINY["seed"], 2)]
    tables = []
    for t in (1, 2):
        res = json.loads((run / f"threads-{t}" / "results.json").read_text())  # one seed: the pipeline's own dir
        assert res["split"] == "dev" and [x["setting"] for x in res["rows"]][:4] == [
            "no-tool",
            "workflow",
            "sft12",
            "sft-rl",
        ]
        table = RunTable.of(res)
        assert res["claims"] == run_claims(table.rows, table.tc_optimal)  # the run carries its own claim values
        tables.append(res)

    by_id = {c["id"]: c for c in doc["claims"]}
    assert list(by_id) == [c.id for c in CLAIMS]
    for cid, c in by_id.items():
        own = [tb["claims"][cid] for tb in tables]
        assert c["runs"] == sum(o["holds"] is not None for o in own)
        assert c["holds"] == sum(o["holds"] is True for o in own)
        assert c["values"] == [o["value"] for o in own]
    for tb, label in zip(tables, ("1t", "2t")):
        by = {x["setting"]: x for x in tb["rows"]}
        ems = [by[s]["em"] for s in ("no-tool", "workflow", "sft12", "sft-rl")]
        holds = ems[0] < ems[1] < ems[2] <= ems[3]
        rows = RunTable.of(tb).rows
        assert tb["claims"]["chain"]["holds"] is holds and (chain_breaks(rows) == []) is holds
        assert tb["claims"]["otc_closes_gap"]["value"] == gap_closed(by_setting(rows), tb["tc_optimal"])
        assert tb["claims"]["chain"]["value"] == pytest.approx(min(b - a for a, b in zip(ems, ems[1:])))
        chain_line = doc["verdicts"][0]
        assert f"seed {TINY['seed']}·{label}" in chain_line
    assert doc["verdicts"][0].startswith(
        f"- EM(no tool) < EM(workflow) < EM(SFT-1+2) ≤ EM(SFT+RL) on {by_id['chain']['holds']}/2 runs"
    )
