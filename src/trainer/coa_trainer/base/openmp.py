"""OpenMP's wait policy for the trainer, chosen before PyTorch loads its OpenMP runtime. Standard library only:
`__main__` calls `passive_wait()` as its first statement, so `python -m coa_trainer` sleeps between parallel regions
whoever launches it (Train Stage, the pipeline's stages, a terminal, torchrun).

libgomp (PyTorch's OpenMP on Linux) reads OMP_WAIT_POLICY once, when the library loads, i.e. at `import torch`; set
later it changes nothing, hence here and not in `setup_runtime`. Unset, its threads spin at every barrier before they
sleep: with another busy process on a 2-core machine the spinning threads take the cores the working ones need, and
an embedded pretrain ran several times slower than with PASSIVE (bench/trainer/wait_policy.py, bench/RESULTS.md).
PASSIVE only schedules differently: the same numbers come out. A user's own OMP_WAIT_POLICY is kept.
"""

from __future__ import annotations

import os
import sys

POLICY = "PASSIVE"


def passive_wait() -> bool:
    """Set OMP_WAIT_POLICY=PASSIVE unless the user set one. False when torch is already loaded (too late to matter)."""
    os.environ.setdefault("OMP_WAIT_POLICY", POLICY)
    return "torch" not in sys.modules
