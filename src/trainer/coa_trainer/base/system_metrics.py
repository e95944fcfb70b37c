"""System metrics logged with a stage's metrics (`system/*`): this process's CPU use and memory, the machine's CPU and
memory, and the GPU's where one is used. Names and meanings come from src/core/metrics.ts SYSTEM_METRICS through
schemas/system-metrics.json; a sample holds only names of that table, and only what this machine can tell (no /proc:
no machine figures; no GPU in use: no GPU figures). Standard library only; torch is asked only when already loaded.

Why: a stage that ran several times slower beside another busy process (threads spinning, see base/openmp.py) showed
nothing wrong but its tokens/s; the machine's CPU against the process's own says at once that it is being shared.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ..contracts.schemas import load_schema_file

GB = 1e9


def system_metric_names() -> frozenset[str]:
    return frozenset(load_schema_file("system-metrics.json"))


def _machine_cpu() -> tuple[int, int] | None:
    """(busy, total) jiffies of all cores since boot, from /proc/stat; None where there is no /proc."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already counted in user
    return total - idle, total


def _meminfo() -> dict[str, int]:
    try:
        text = Path("/proc/meminfo").read_text(encoding="ascii")
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key] = int(parts[0]) * 1024
    return out


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class SystemSampler:
    """Each `sample()` covers the time since the previous one (the first: since the sampler was made)."""

    def __init__(self) -> None:
        self.names = system_metric_names()
        self._cpu = time.process_time()
        self._wall = time.monotonic()
        self._machine = _machine_cpu()

    def sample(self) -> dict[str, float]:
        out: dict[str, float] = {}
        cpu, wall, machine = time.process_time(), time.monotonic(), _machine_cpu()
        if wall > self._wall:
            out["system/cpu_percent"] = 100.0 * (cpu - self._cpu) / (wall - self._wall)
        if machine and self._machine and machine[1] > self._machine[1]:
            out["system/machine_cpu_percent"] = (
                100.0 * (machine[0] - self._machine[0]) / (machine[1] - self._machine[1])
            )
        self._cpu, self._wall, self._machine = cpu, wall, machine
        rss = _rss_bytes()
        if rss is not None:
            out["system/rss_gb"] = rss / GB
        mem = _meminfo()
        if mem.get("MemTotal") and "MemAvailable" in mem:
            out["system/mem_percent"] = 100.0 * (1 - mem["MemAvailable"] / mem["MemTotal"])
        out.update(_gpu())
        return {k: float(v) for k, v in out.items() if k in self.names}


def _gpu() -> dict[str, float]:
    torch = sys.modules.get("torch")  # never imports it: a process without torch has no GPU in use
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return {}
    out = {"system/gpu_mem_gb": torch.cuda.memory_allocated() / GB}
    try:
        out["system/gpu_util_percent"] = float(torch.cuda.utilization())
    except Exception:  # noqa: BLE001 - NVML (pynvml) missing or refused: no utilisation, the rest stands
        pass
    return out
