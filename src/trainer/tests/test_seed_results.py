"""The multi-seed results (evaluation/seed_results.py) and the OTC headroom (results.otc_headroom) from synthetic per-seed
results: exact means, sample sds, seed counts and verdict sentences, and the files `pipeline --seeds` writes."""

import json
import math
from dataclasses import replace

import pytest
from coa_trainer.evaluation.claims import ResultRow
from coa_trainer.evaluation.results import comparisons, otc_headroom
from coa_trainer.evaluation.seed_results import (
    SeedResult,
    aggregate_rows,
    mean_sd,
    seed_verdicts,
    write_seed_results,
)


def row(setting, em, tc, tp=None, fmt=0.0):
    return ResultRow(setting, em, tc, tp, fmt)


def seed(s, no_tool, wf, sft12, rl, otc, tc_rl, tc_otc, tp_rl, tp_otc, opt=0.9):
    return SeedResult(
        s,
        f"seed-{s}",
        [
            ResultRow("no-tool", no_tool, 0.0, None, None),
            row("workflow", wf, 1.2, 0.2, 0.3),
            row("sft12", sft12, 1.4, 0.6),
            row("sft-rl", rl, tc_rl, tp_rl),
            row("sft-rl-otc", otc, tc_otc, tp_otc),
        ],
        opt,
        "test",
    )


PER_SEED = [
    seed(0, 0.2, 0.3, 0.8, 0.9, 0.89, 1.4, 1.1, 0.6, 0.8),  # gap 0.5, closed 0.3/0.5 = 60 %
    seed(1, 0.2, 0.3, 0.8, 0.85, 0.8, 1.5, 1.4, 0.6, 0.5),  # gap 0.6, closed 1/6; EM −0.05; TP falls
    seed(2, 0.3, 0.25, 0.8, 0.79, 0.8, 1.3, 1.0, 0.6, 0.7),  # no-tool > workflow, RL < SFT-1+2; closed 75 %
]


def test_mean_and_sample_sd():
    assert mean_sd([1.0, 2.0, 3.0]) == (2.0, 1.0, 3)
    assert mean_sd([0.5, None]) == (0.5, None, 1)  # one value: sd undefined
    assert mean_sd([None, None]) == (None, None, 0)
    m, sd, n = mean_sd([0.9, 0.85, 0.79])
    assert n == 3 and m == pytest.approx(0.84666666666, abs=1e-9)
    assert sd == pytest.approx(math.sqrt(((0.9 - m) ** 2 + (0.85 - m) ** 2 + (0.79 - m) ** 2) / 2), abs=1e-12)


def test_aggregate_rows_are_means_with_sds_in_table_order():
    rows = aggregate_rows(PER_SEED)
    assert [r.setting for r in rows] == ["no-tool", "workflow", "sft12", "sft-rl", "sft-rl-otc"]
    by = {r.setting: r for r in rows}
    assert by["sft12"].em == pytest.approx(0.8) and by["sft12"].em_sd == pytest.approx(0.0, abs=1e-12)
    assert by["sft-rl"].tc == pytest.approx(1.4) and by["sft-rl"].tc_sd == pytest.approx(0.1)
    assert by["no-tool"].tp is None and by["no-tool"].tp_sd is None and by["no-tool"].seeds == 3
    assert by["sft-rl-otc"].tp == pytest.approx(2 / 3) and by["sft-rl-otc"].tp_sd == pytest.approx(0.15275252316)


def test_headroom_is_the_share_of_the_over_calling_gap():
    h = otc_headroom(PER_SEED[0].rows, 0.9)
    assert h is not None and h.gap == pytest.approx(0.5) and h.closed == pytest.approx(0.6)
    assert otc_headroom(PER_SEED[0].rows, None) is None  # users' data: no optimum
    none = otc_headroom([row("sft-rl", 0.9, 0.8), row("sft-rl-otc", 0.9, 0.7)], 0.9)
    assert none is not None and none.closed is None  # no gap
    text = "\n".join(comparisons(PER_SEED[0].rows, 0.9))
    assert "RL-2 TC 1.400 − optimal 0.900 = 0.500 calls per question; OTC-GRPO (TC 1.100) closes 60% of it" in text


def test_verdicts_count_seeds_and_name_the_failing_ones():
    lines = seed_verdicts(PER_SEED)
    assert lines[0] == (
        "- EM(no tool) < EM(workflow) < EM(SFT-1+2) ≤ EM(SFT+RL) on 2/3 seeds (not on seed 2): weakest "
        "link +0.033 ± 0.076 (seed 0: +0.100, seed 1: +0.050, seed 2: -0.050); broken links — seed 2: "
        "no-tool 0.300 ≥ workflow 0.250, sft12 0.800 > sft-rl 0.790."
    )
    assert lines[1] == (
        "- The trained agent beats the always-search workflow on 3/3 seeds: EM difference +0.563 ± 0.032 "
        "(seed 0: +0.600, seed 1: +0.550, seed 2: +0.540)."
    )
    assert lines[2] == (
        "- SFT-3 + RL is at least SFT-1+2 on 2/3 seeds (not on seed 2): EM difference +0.047 ± 0.055 "
        "(seed 0: +0.100, seed 1: +0.050, seed 2: -0.010)."
    )
    # TC cuts 21.4 %, 6.7 %, 23.1 %; EM −0.01, −0.05, +0.01
    assert lines[3] == (
        "- OTC-GRPO cuts tool calls (by ≥ 5%) on 3/3 seeds: cut 17 ± 9% (seed 0: 21%, seed 1: 7%, seed 2: 23%)."
    )
    assert lines[4] == (
        "- OTC-GRPO keeps EM (within 0.02 of RL-2) on 2/3 seeds (not on seed 1): EM difference -0.017 ± "
        "0.031 (seed 0: -0.010, seed 1: -0.050, seed 2: +0.010); on average OTC keeps EM."
    )
    assert lines[5] == (
        "- OTC-GRPO closes ≥ 50% of the over-calling gap (TC of RL-2 − the benchmark's optimal TC) on "
        "2/3 seeds (not on seed 1): closed 51 ± 30% (seed 0: 60%, seed 1: 17%, seed 2: 75%)."
    )
    assert lines[6] == (
        "- Tool productivity (correct answers per call) rises with OTC-GRPO on 2/3 seeds (not on seed "
        "1): TP difference +0.067 ± 0.153 (seed 0: +0.200, seed 1: -0.100, seed 2: +0.100)."
    )
    assert len(lines) == 7


def test_em_lost_on_average_is_said():
    worse = [seed(s, 0.2, 0.3, 0.8, 0.9, 0.85, 1.4, 1.0, 0.6, 0.8) for s in (0, 1)]
    (otc,) = [x for x in seed_verdicts(worse) if x.startswith("- OTC-GRPO keeps EM")]
    assert otc.endswith(
        "on 0/2 seeds (not on seed 0, seed 1): EM difference -0.050 ± 0.000 (seed 0: -0.050, "
        "seed 1: -0.050); on average OTC does NOT keep EM."
    )


def test_a_claim_without_its_rows_is_left_out():
    """Users' data: no optimum, so no gap line; a run without an OTC row: no OTC lines at all."""
    no_opt = [replace(p, tc_optimal=None) for p in PER_SEED]
    assert not any("over-calling gap" in x for x in seed_verdicts(no_opt))
    no_otc = [replace(p, rows=[r for r in p.rows if r.setting != "sft-rl-otc"]) for p in PER_SEED]
    assert [x.split(" on ")[0] for x in seed_verdicts(no_otc)] == [
        "- EM(no tool) < EM(workflow) < EM(SFT-1+2) ≤ EM(SFT+RL)",
        "- The trained agent beats the always-search workflow",
        "- SFT-3 + RL is at least SFT-1+2",
    ]


def test_files_hold_means_per_seed_rows_and_verdicts(tmp_path):
    json_path, md_path = write_seed_results(tmp_path, PER_SEED, "test", None)
    doc = json.loads(json_path.read_text())
    assert doc["seeds"] == [0, 1, 2] and doc["split"] == "test"
    assert [r["setting"] for r in doc["rows"]][-1] == "sft-rl-otc"
    assert [p["otc_headroom"]["closed"] for p in doc["per_seed"]] == pytest.approx([0.6, 1 / 6, 0.75])
    assert doc["verdicts"] == seed_verdicts(PER_SEED)
    md = md_path.read_text()
    assert "| sft-rl | 0.847 ± 0.055 | 1.400 ± 0.100 | 0.600 ± 0.000 | 0.000 ± 0.000 |" in md
    assert "| 1 | sft-rl-otc | 0.800 | 1.400 | 0.500 | 0.000 |" in md
    assert "| 2 | 0.900 | 1.300 | 1.000 | +0.400 | 75% |" in md
    assert "(3 seeds)" in md and all(v in md for v in doc["verdicts"])
