"""The system metrics a stage logs (system/*): only names of src/core/metrics.ts SYSTEM_METRICS (through
schemas/system-metrics.json), finite, and telling: CPU time spent shows as the process's CPU share."""

import math
import time

from coa_trainer.base.system_metrics import SystemSampler, system_metric_names


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
