"""Errors that end a command with a code the editor understands (events' `error.code`) and an exit status."""

from __future__ import annotations


class StageError(RuntimeError):
    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code
