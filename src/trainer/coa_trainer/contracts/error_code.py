# Generated from src/core/events.ts (TRAINER_ERRORS) by scripts/gen-python-contracts.mjs (datamodel-code-generator): do not edit.

from __future__ import annotations

from enum import Enum


class ErrorCode(str, Enum):
    bad_config = "bad_config"
    bad_data = "bad_data"
    missing_model = "missing_model"
    bad_teacher = "bad_teacher"
    bad_checkpoint = "bad_checkpoint"
    bad_run_dir = "bad_run_dir"
    stage_failed = "stage_failed"
    env_unreachable = "env_unreachable"
    diverged = "diverged"
    internal = "internal"
