"""The system metrics a stage logs (system/*): only names of src/core/metrics.ts SYSTEM_METRICS (through
schemas/system-metrics.json), finite, and telling: CPU time spent shows as the process's CPU share."""

import math
import time
from dataclasses import fields

from coa_trainer.base.system_metrics import SystemSample, SystemSampler, system_metric_names


def test_a_sample_holds_only_the_core_tables_names_all_finite_and_measures_cpu():
    names = system_metric_names()
    assert {"system/cpu_percent", "system/rss_gb", "system/gpu_mem_gb"} <= names
    sampler = SystemSampler()
    spent = time.process_time()
    while time.process_time() - spent < 0.2:  # CPU time, whatever else the machine runs
        pass
    sample = sampler.sample()
    assert set(sample) <= names
    assert all(isinstance(v, float) and math.isfinite(v) for v in sample.values())
    assert sample["system/cpu_percent"] > 0
    assert sample["system/rss_gb"] > 0.01  # a Python process with the trainer's imports
    assert 0 <= sample["system/machine_cpu_percent"] <= 100 and 0 < sample["system/mem_percent"] < 100
    assert not any(k.startswith("system/gpu") for k in sample), "no GPU in use here: no GPU figures"
    # The next sample covers only the time since this one: an idle interval shows (near) no CPU.
    time.sleep(0.2)
    assert sampler.sample()["system/cpu_percent"] < sample["system/cpu_percent"]


def test_the_sample_class_has_one_field_per_metric_of_the_core_table():
    """A metric added to (or renamed in) src/core/metrics.ts SYSTEM_METRICS without its field here would never be
    logged; a field the table lacks would be dropped from every sample."""
    assert {f"system/{f.name}" for f in fields(SystemSample)} == system_metric_names()
    sample = SystemSample(cpu_percent=12.5, rss_gb=0.25, gpu_util_percent=None)
    assert sample.values(system_metric_names()) == {"system/cpu_percent": 12.5, "system/rss_gb": 0.25}
    assert sample.values(frozenset({"system/rss_gb"})) == {"system/rss_gb": 0.25}
