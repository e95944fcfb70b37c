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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

from ..contracts.schemas import load_schema_file

GB = 1e9


def system_metric_names() -> frozenset[str]:
    return frozenset(load_schema_file("system-metrics.json"))


@dataclass(frozen=True)
class SystemSample:
    """One sample's figures, each the metric `system/<field>` of the core's table; None where this machine cannot tell
    it (no /proc, no GPU in use). In the order a metrics event lists them."""

    cpu_percent: float | None = None
    machine_cpu_percent: float | None = None
    rss_gb: float | None = None
    mem_percent: float | None = None
    gpu_mem_gb: float | None = None
    gpu_util_percent: float | None = None

    def values(self, names: frozenset[str]) -> dict[str, float]:
        """The metrics event's values: {system/<field>: figure} of the figures known, named in `names`."""
        return {f"system/{k}": float(v) for k, v in asdict(self).items() if v is not None and f"system/{k}" in names}


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


class _Memory(NamedTuple):
    total: int  # bytes
    available: int


def _memory() -> _Memory | None:
    """The machine's memory from /proc/meminfo (MemTotal, MemAvailable); None where it does not tell both."""
    try:
        text = Path("/proc/meminfo").read_text(encoding="ascii")
    except OSError:
        return None
    total = available = None
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if not (parts and parts[0].isdigit()):
            continue
        if key == "MemTotal":
            total = int(parts[0]) * 1024
        elif key == "MemAvailable":
            available = int(parts[0]) * 1024
    return _Memory(total, available) if total and available is not None else None


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
        cpu, wall, machine = time.process_time(), time.monotonic(), _machine_cpu()
        before_cpu, before_wall, before_machine = self._cpu, self._wall, self._machine
        self._cpu, self._wall, self._machine = cpu, wall, machine
        rss, mem, gpu = _rss_bytes(), _memory(), _gpu()
        return SystemSample(
            cpu_percent=100.0 * (cpu - before_cpu) / (wall - before_wall) if wall > before_wall else None,
            machine_cpu_percent=(
                100.0 * (machine[0] - before_machine[0]) / (machine[1] - before_machine[1])
                if machine and before_machine and machine[1] > before_machine[1]
                else None
            ),
            rss_gb=rss / GB if rss is not None else None,
            mem_percent=100.0 * (1 - mem.available / mem.total) if mem is not None else None,
            gpu_mem_gb=gpu.mem_gb if gpu is not None else None,
            gpu_util_percent=gpu.util_percent if gpu is not None else None,
        ).values(self.names)


class _Gpu(NamedTuple):
    mem_gb: float
    util_percent: float | None  # None: NVML (pynvml) missing or refused


def _gpu() -> _Gpu | None:
    torch = sys.modules.get("torch")  # never imports it: a process without torch has no GPU in use
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    mem_gb = torch.cuda.memory_allocated() / GB
    try:
        util = float(torch.cuda.utilization())
    except Exception:  # noqa: BLE001 - NVML (pynvml) missing or refused: no utilisation, the rest stands
        util = None
    return _Gpu(mem_gb, util)
