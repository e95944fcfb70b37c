"""The stage table (schemas/stages.json, from src/core/stages.ts STAGE_TABLE) read once into its typed rows, the class
generated from the core's StageInfoSchema (contracts/stage_info.py)."""

from __future__ import annotations

from functools import cache

import pydantic

from ..contracts.schemas import stage_table
from ..contracts.stage_info import StageInfo


class _StageTable(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")  # the pipeline and results tables: read elsewhere
    stages: tuple[StageInfo, ...]


@cache
def stage_rows() -> tuple[StageInfo, ...]:
    """Every stage of the table (labelled runs such as rl2-otc included), in pipeline order."""
    return _StageTable.model_validate(stage_table()).stages
