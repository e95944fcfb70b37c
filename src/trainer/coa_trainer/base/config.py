"""Run config: validated against the run-config JSON Schema (zod → JSON Schema, owned by src/core/config.ts), missing
fields filled from its `default` keywords — so defaults live in TypeScript only — and read as the typed classes
generated from the same schema (contracts/run_config.py). Code reads `config.stages.rl2.max_len`, never a dict."""

from __future__ import annotations

import copy
import os
import json
import math
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema.protocols
import jsonschema.validators
import pydantic

from ..contracts.run_config import PretrainStage, RlStage, RunConfig, Sft1Stage, SftMixStage
from ..contracts.schemas import load_schema_file, run_config_schema
from ..contracts.error_code import ErrorCode
from .errors import CoaError
from .schema_node import SchemaNode, run_config_node

StageConfig = PretrainStage | Sft1Stage | SftMixStage | RlStage


class ConfigError(CoaError, ValueError):
    """A config that cannot be used; the message names the file and the offending field."""

    code = ErrorCode.bad_config


def _resolve(schema: SchemaNode, root: SchemaNode) -> SchemaNode:
    """A `$ref` to one of the root's `$defs` (how zod writes a schema used twice) followed; any other node as it is."""
    ref = schema.ref
    if ref and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if root.defs is None or name not in root.defs:
            raise ConfigError(f"run-config schema: {ref} names no definition (regenerate schemas: npm run build)")
        return root.defs[name]
    return schema


def fill_defaults(value: object, schema: SchemaNode, root: SchemaNode) -> object:
    """Recursively add `default`s for missing object properties (anyOf branches: the object one)."""
    schema = _resolve(schema, root)
    if isinstance(value, dict):
        props = schema.properties
        if props is None:
            for branch in schema.any_of or []:
                branch = _resolve(branch, root)
                if branch.type == "object":
                    return fill_defaults(value, branch, root)
            return value
        for key, sub in props.items():
            sub_r = _resolve(sub, root)
            if key not in value and sub_r.has_default:
                value[key] = copy.deepcopy(sub_r.default)
            if key in value:
                value[key] = fill_defaults(value[key], sub_r, root)
    return value


def _format_error(err: jsonschema.ValidationError, source: str) -> str:
    path = ".".join(str(p) for p in err.absolute_path) or "config"  # the whole file, as the core names it
    if _non_finite(err.instance):
        return f"{source}: {path}: {err.instance} is not a finite number"
    return f"{source}: {path}: {err.message}"


def _non_finite(value: object) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _is_number(checker: jsonschema.TypeChecker, value: object) -> bool:
    """JSON numbers are finite: Python's float NaN and infinities (json reads `1e999` as inf) are not numbers here.
    Every number of the schema also has a finite range (src/core/configZod.ts), which 1e300 is outside."""
    return jsonschema.Draft202012Validator.TYPE_CHECKER.is_type(value, "number") and not _non_finite(value)


def _is_integer(checker: jsonschema.TypeChecker, value: object) -> bool:
    return jsonschema.Draft202012Validator.TYPE_CHECKER.is_type(value, "integer") and not _non_finite(value)


class _MultipleOf(pydantic.BaseModel):
    """One rule of the schema's `x-coa-multiple-of` keyword: `size` must be a multiple of `times` × `of`."""

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")
    size: str
    of: str
    times: int
    why: str


_MULTIPLE_OF_RULES = pydantic.TypeAdapter(list[_MultipleOf])


def _multiple_of_rules(
    validator: jsonschema.protocols.Validator, rules: object, instance: object, schema: dict
) -> Iterator[jsonschema.ValidationError]:
    """`x-coa-multiple-of` (src/core/config.ts EMBEDDED_SHAPE_RULES): sizes that must divide evenly, a missing size
    taking its default; worded as the core words it (shapeRuleMessage)."""
    if not isinstance(instance, dict):
        return
    props = schema.get("properties", {})

    def size(name: str) -> Any:
        return instance.get(name, props.get(name, {}).get("default"))

    def whole(v: object) -> int | None:  # JSON's 1E2 is an integer (Python reads a float), as the schema's "integer"
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 and v == int(v):
            return int(v)
        return None

    for rule in _MULTIPLE_OF_RULES.validate_python(rules):
        value, of, times = whole(size(rule.size)), whole(size(rule.of)), rule.times
        if value is None or of is None:
            continue  # a size that is not a positive integer has its own error
        if value % (times * of):
            need = f"{rule.of} ({of})" if times == 1 else f"{times} × {rule.of} ({times * of})"
            yield jsonschema.ValidationError(
                f"{rule.size} {value} is not a multiple of {need}: {rule.why}", path=[rule.size]
            )


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    validators={"x-coa-multiple-of": _multiple_of_rules},
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"number": _is_number, "integer": _is_integer}
    ),
)


def validate_config(raw: object, source: str = "config", overrides: list[str] | None = None) -> RunConfig:
    """Validate, fill defaults, type. Raises ConfigError listing every problem. `overrides`: `key=value` arguments
    (base/overrides.py) applied to `raw` first; a problem in a field they set names the override."""
    from .overrides import OverrideError, apply_overrides, override_for, parse_override

    schema, node = run_config_schema(), run_config_node()
    try:
        parsed = [parse_override(o, node) for o in overrides or []]
        raw = apply_overrides(raw, parsed) if parsed else raw
    except OverrideError as e:
        raise ConfigError(f"command line: {e}") from None
    validator = _Validator(schema)
    errors = sorted(validator.iter_errors(raw), key=lambda e: list(e.absolute_path))
    if errors:

        def where(err: jsonschema.ValidationError) -> str:
            given = override_for(parsed, list(err.absolute_path))
            return f"command line: override {given.text}" if given else source

        raise ConfigError("invalid run config:\n" + "\n".join(_format_error(e, where(e)) for e in errors[:20]))
    try:
        return RunConfig.model_validate(fill_defaults(copy.deepcopy(raw), node, node))
    except pydantic.ValidationError as e:  # the classes are generated from the schema just checked: a gap is a bug,
        raise ConfigError(f"invalid run config:\n{source}: {e}") from e  # but still the user's config, named


def load_config(path: str | Path, overrides: list[str] | None = None) -> RunConfig:
    """Read, check and type a run config file, with the command line's `key=value` overrides applied. Every way it
    can be unreadable is one ConfigError naming the file (and line and column where there is one) or the override,
    and what to do — never a traceback."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read config {path}: {e.strerror}") from e
    raw = parse_json_config(decode_config(data, str(path)), str(path))
    return resolve_data_paths(validate_config(raw, str(path), overrides), Path(os.path.abspath(path)).parent)


def decode_config(data: bytes, source: str) -> str:
    """A config file's text as the core reads it (src/core/data/check.ts; both run test/conformance/run-configs.json):
    UTF-8, a byte order mark at its start skipped (some editors write one; it is not part of the JSON), invalid UTF-8
    an error at the first bad byte's line and column (columns in characters, the BOM not counted)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line_start = data.rfind(b"\n", 0, e.start) + 1
        line = data.count(b"\n", 0, e.start) + 1
        column = len(data[line_start : e.start].decode("utf-8")) + 1
        raise ConfigError(
            f"{source}:{line}:{column}: not UTF-8 (byte 0x{data[e.start]:02x}): save the file as UTF-8"
        ) from e


def parse_json_config(text: str, source: str) -> Any:
    """JSON as the run config accepts it: numbers must be finite (Python's json would take NaN and Infinity, and an
    `lr` of Infinity trained every weight to NaN; `1e999`, read as inf, is refused by the schema), nesting bounded as
    the core bounds it (the schema's `x-coa-max-nesting`, checked before parsing, at the bracket that goes too deep)."""

    def no_constants(name: str) -> Any:
        raise _NonFinite(name)

    max_nesting = _schema_limits().max_nesting
    deep = too_deep_at(text, max_nesting)
    if deep >= 0:
        line = text.count("\n", 0, deep) + 1
        column = deep - (text.rfind("\n", 0, deep) + 1) + 1
        raise ConfigError(f"{source}:{line}:{column}: nested deeper than {max_nesting} levels")
    try:
        return json.loads(text, parse_constant=no_constants)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{source}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from e
    except _NonFinite as e:
        line, column = _token_position(text, e.args[0])
        raise ConfigError(
            f"{source}:{line}:{column}: {e.args[0]} is not a number JSON allows: give a finite number"
        ) from None
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply to be a run config") from None


class _NonFinite(Exception):
    pass


class _SchemaLimits(pydantic.BaseModel):
    """The run-config schema's own keywords that bound a config file before it is parsed (CONFIG_MAX_NESTING)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")
    max_nesting: int = pydantic.Field(alias="x-coa-max-nesting")


@cache
def _schema_limits() -> _SchemaLimits:
    return _SchemaLimits.model_validate(run_config_schema())


def too_deep_at(text: str, max_depth: int) -> int:
    """Index of the first `[` or `{` outside strings that opens level max_depth + 1; -1 when none does (as the core's
    jsonl.tooDeepAt)."""
    if text.count("[") + text.count("{") <= max_depth:
        return -1
    depth = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in "[{":
            depth += 1
            if depth > max_depth:
                return i
        elif c in "]}":
            depth -= 1
        i += 1
    return -1


def _token_position(text: str, token: str) -> tuple[int, int]:
    """Line and column of the first `token` outside a JSON string."""
    in_string = escaped = False
    for i, c in enumerate(text):
        if in_string:
            in_string = not (c == '"' and not escaped)
            escaped = c == "\\" and not escaped
        elif c == '"':
            in_string = True
        elif text.startswith(token, i):
            line = text.count("\n", 0, i) + 1
            return line, i - (text.rfind("\n", 0, i) + 1) + 1
    return 1, 1


def default_config() -> RunConfig:
    return validate_config({}, "defaults")


def config_dict(config: RunConfig) -> dict:
    """The config as JSON data (for events, for a config file a child process reads): what was given or defaulted."""
    return config.model_dump(mode="json", by_alias=True, exclude_unset=True)


def stage_config(config: RunConfig, stage: str) -> StageConfig:
    """`stages.<stage>` of a stage id (a labelled run such as rl2-otc reads the stage it trains: pass that)."""
    return getattr(config.stages, stage)


SupervisedStage = PretrainStage | Sft1Stage | SftMixStage


def supervised_stage(scfg: StageConfig, stage: str) -> SupervisedStage:
    """A supervised stage's section (pretrain, SFT-1/2/3); a ConfigError names the stage when it is an RL one."""
    if isinstance(scfg, RlStage):
        raise ConfigError(f"stages.{stage} is an RL stage, not a supervised one")
    return scfg


def sft_mix_stage(scfg: StageConfig, stage: str) -> SftMixStage:
    """An SFT-2 / SFT-3 section (the CoA : CoT mix)."""
    if not isinstance(scfg, SftMixStage):
        raise ConfigError(f"stages.{stage} is not an SFT-2 / SFT-3 stage")
    return scfg


def rl_stage(scfg: StageConfig, stage: str) -> RlStage:
    """An RL stage's section (RL-1 / RL-2)."""
    if not isinstance(scfg, RlStage):
        raise ConfigError(f"stages.{stage} is not an RL stage")
    return scfg


def resolve_data_paths(config: RunConfig, config_dir: Path) -> RunConfig:
    """Make every path of the run config absolute by the one rule `coa data check` and the extension apply: a relative
    path is relative to the run config's directory (the fields: schemas/config-paths.json, from src/core/data/paths.ts
    CONFIG_PATH_FIELDS — model.path, stages.*.init_from, the data files, collect.teacher, env.cli, logging dirs …).
    So a config run from any working directory, or copied elsewhere (the pipeline's rl2-otc.run.json), names the same
    files."""
    table = _config_paths()
    commands = table.commands
    legacy = table.legacy_defaults
    for field in table.fields:

        def fix(p: object, field: str = field) -> object:
            if not isinstance(p, str) or p == "":
                return p
            if legacy.get(field) == p:
                return None
            if Path(p).is_absolute() or (field in commands and "/" not in p):
                return p
            return os.path.normpath(os.path.join(config_dir, p))  # as path.resolve in Node: links kept

        _fix_field(config, field.split("."), fix)
    return config


class _ConfigPaths(pydantic.BaseModel):
    """schemas/config-paths.json (src/core/data/paths.ts): the path fields of a run config (`*`: every field of a
    section, `name[]`: every element of a list), those that name a command (a bare name is looked up on PATH), and
    the old defaults that now mean "not set"."""

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")
    rule: str
    fields: tuple[str, ...]
    commands: frozenset[str]
    legacy_defaults: dict[str, str]


@cache
def _config_paths() -> _ConfigPaths:
    return _ConfigPaths.model_validate(load_schema_file("config-paths.json"))


def _fix_field(node: object, parts: list[str], fix: Callable[[object], object]) -> None:
    """Apply `fix` to the field at `parts` of a config object (`*`: every field, `name[]`: every list element)."""
    if node is None or not parts:
        return
    head, rest = parts[0], parts[1:]
    if head == "*":  # every field of a config section (a pydantic model of contracts/run_config.py)
        names = list(type(node).model_fields) if isinstance(node, pydantic.BaseModel) else []
    else:
        names = [head.removesuffix("[]")]
    for name in names:
        if not hasattr(node, name):
            continue
        value = getattr(node, name)
        if head.endswith("[]"):
            if not isinstance(value, list):
                continue
            if rest:
                for element in value:
                    if not isinstance(element, str):
                        _fix_field(element, rest, fix)
            else:
                setattr(node, name, [fix(e) if isinstance(e, str) else e for e in value])
        elif rest:
            _fix_field(value, rest, fix)
        else:
            setattr(node, name, fix(value))
