"""Run config: validated against the run-config JSON Schema (zod → JSON Schema, owned by src/core/config.ts), missing
fields filled from its `default` keywords — so defaults live in TypeScript only — and read as the typed classes
generated from the same schema (contracts/run_config.py). Code reads `config.stages.rl2.max_len`, never a dict."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema

from ..contracts.run_config import PretrainStage, RlStage, RunConfig, Sft1Stage, SftMixStage
from ..contracts.schemas import run_config_schema
from ..contracts.error_code import ErrorCode
from .errors import CoaError

StageConfig = PretrainStage | Sft1Stage | SftMixStage | RlStage


class ConfigError(CoaError, ValueError):
    """A config that cannot be used; the message names the file and the offending field."""

    code = ErrorCode.bad_config


def _resolve(schema: dict, root: dict) -> dict:
    ref = schema.get("$ref")
    if ref and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node[part]
        return node
    return schema


def fill_defaults(value: Any, schema: dict, root: dict) -> Any:
    """Recursively add `default`s for missing object properties (anyOf branches: the object one)."""
    schema = _resolve(schema, root)
    if isinstance(value, dict):
        props = schema.get("properties")
        if props is None:
            for branch in schema.get("anyOf", []):
                branch = _resolve(branch, root)
                if branch.get("type") == "object":
                    return fill_defaults(value, branch, root)
            return value
        for key, sub in props.items():
            sub_r = _resolve(sub, root)
            if key not in value and "default" in sub_r:
                value[key] = copy.deepcopy(sub_r["default"])
            if key in value:
                value[key] = fill_defaults(value[key], sub_r, root)
    return value


def _format_error(err: jsonschema.ValidationError, source: str) -> str:
    path = ".".join(str(p) for p in err.absolute_path) or "(root)"
    return f"{source}: {path}: {err.message}"


def validate_config(raw: Any, source: str = "config") -> RunConfig:
    """Validate, fill defaults, type. Raises ConfigError listing every problem."""
    schema = run_config_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(raw), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError("invalid run config:\n" + "\n".join(_format_error(e, source) for e in errors[:20]))
    return RunConfig.model_validate(fill_defaults(copy.deepcopy(raw), schema, schema))


def load_config(path: str | Path) -> RunConfig:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read config {path}: {e.strerror}") from e
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from e
    return resolve_data_paths(validate_config(raw, str(path)), path.resolve().parent)


def default_config() -> RunConfig:
    return validate_config({}, "defaults")


def config_dict(config: RunConfig) -> dict:
    """The config as JSON data (for events, for a config file a child process reads): what was given or defaulted."""
    return config.model_dump(mode="json", by_alias=True, exclude_unset=True)


def stage_config(config: RunConfig, stage: str) -> StageConfig:
    """`stages.<stage>` of a stage id (a labelled run such as rl2-otc reads the stage it trains: pass that)."""
    return getattr(config.stages, stage)


def resolve_data_paths(config: RunConfig, config_dir: Path) -> RunConfig:
    """Make the data section's paths absolute (relative ones are relative to the run config's directory), so a
    config copied elsewhere (the pipeline's rl2-otc.run.json) still names the same files."""
    def fix(p: str | None) -> str | None:
        return p if p is None or Path(p).is_absolute() else str((config_dir / p).resolve())

    teacher = config.collect.teacher  # collect.teacher's directories, like the data files
    teacher.path, teacher.tokenizer = fix(teacher.path), fix(teacher.tokenizer)
    data = config.data
    if data is None:
        return config
    q = data.questions
    q.train, q.dev, q.test = fix(q.train), fix(q.dev), fix(q.test)
    data.sft = [fix(e) if isinstance(e, str) else e.model_copy(update={"path": fix(e.path)}) for e in data.sft]
    data.sft1_pairs, data.corpus = fix(data.sft1_pairs), fix(data.corpus)
    return config
