# Generated from src/core/boundaryClasses.ts (BOUNDARY_CLASSES) by scripts/gen-python-contracts.mjs (datamodel-code-generator): do not edit.

from __future__ import annotations

from enum import Enum


class BoundaryClass(str, Enum):
    no_search = "no-search"
    over_search = "over-search"
    needed_search = "needed-search"
    under_search = "under-search"
    unreachable = "unreachable"
