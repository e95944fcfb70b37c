"""One error type for everything that stops a command for a reason the user can act on: a message that names what to
fix, a code (the `error` event's `code`, generated from src/core/events.ts TRAINER_ERRORS) and the exit status the
core's table gives that code. Each floor names its own kind (ConfigError, DataError, ModelDirError, EnvError, …) as a
subclass with its code; every command reports whatever stops it through `report_failure`, so there is one place where
an exception becomes an event and an exit status."""

from __future__ import annotations

import traceback
from functools import cache
from typing import Protocol

import pydantic

from ..contracts.error_code import ErrorCode
from ..contracts.schemas import load_schema_file
from ..contracts.events import ErrorEvent


class CoaError(RuntimeError):
    """A failure with a code. `prefix` is said before the message in the event (what it is about)."""

    code: ErrorCode = ErrorCode.internal
    prefix: str = ""

    def __init__(self, message: str, code: ErrorCode | str | None = None):
        super().__init__(message)
        if code is not None:
            self.code = ErrorCode(code)

    @property
    def exit_status(self) -> int:
        return exit_status(self.code)


class StageError(CoaError):
    """A stage cannot run as configured (code given by the raiser: bad_config, bad_data …)."""


class _TrainerError(pydantic.BaseModel):
    """A row of schemas/errors.json (src/core/events.ts TRAINER_ERRORS): a code's exit status and what it means."""

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")
    exit: int
    meaning: str


@cache
def _trainer_errors() -> dict[str, _TrainerError]:
    return pydantic.TypeAdapter(dict[str, _TrainerError]).validate_python(load_schema_file("errors.json"))


def exit_status(code: ErrorCode) -> int:
    """The process's exit status for an error code (schemas errors.json, from the core's table)."""
    return _trainer_errors()[ErrorCode(code).value].exit


class EventSink(Protocol):
    """Where report_failure writes its event: base/events.EventWriter (named here, not imported: events imports
    this module)."""

    def emit(self, event: ErrorEvent) -> object: ...


def report_failure(writer: EventSink, stage: str, e: BaseException) -> int:
    """The error event for `e` (an internal error carries its traceback) and the exit status to return."""
    if isinstance(e, CoaError):
        writer.emit(ErrorEvent(message=f"{e.prefix}{e}", code=e.code.value, stage=stage))
        return e.exit_status
    writer.emit(
        ErrorEvent(
            message=f"{type(e).__name__}: {e}",
            code=ErrorCode.internal.value,
            stage=stage,
            detail=traceback.format_exc(),
        )
    )
    return exit_status(ErrorCode.internal)
