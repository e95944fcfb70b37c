# Generated from src/core/lineIndex.ts (LineIndexEntrySchema) by scripts/gen-python-contracts.mjs (datamodel-code-generator): do not edit.

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class LineIndexEntry(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    step: int
    """
    meta.step of the records of this write.
    """
    line: int
    """
    0-based line of the first record in the indexed file.
    """
    offsets: list[int]
    """
    Byte offset of each record's line, in order (lines line, line+1, …).
    """
    end: int
    """
    Byte offset just past the last record's newline: where the next entry starts.
    """
