# Generated from src/core/metrics.ts (BOUNDARY_METRICS) by scripts/gen-python-contracts.mjs (datamodel-code-generator): do not edit.

from __future__ import annotations

from enum import Enum


class BoundaryMetric(str, Enum):
    boundary_over_search = "boundary_over_search"
    boundary_under_search = "boundary_under_search"
    boundary_em_closed_book = "boundary_em_closed_book"
    boundary_tc = "boundary_tc"
    boundary_min_tc = "boundary_min_tc"
    boundary_tc_over_min = "boundary_tc_over_min"
    boundary_s = "boundary_s"
