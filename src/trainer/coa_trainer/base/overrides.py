"""`key=value` overrides of a run config on the trainer's command line (`stages.rl2.lr=1e-5`, as verl's Hydra takes
them), typed by the run config's JSON Schema (schemas/run-config.schema.json): the key must name a field, and the
text becomes the type the field takes. The merged config is then validated by the same schema as the file.

The rules are the core's (src/core/overrides.ts, which `coa data check` uses); both languages run
test/conformance/overrides.json, so a value means the same thing to the editor's check and to the trainer.

Syntax: `a.b.c=value` sets (null or absent objects on the way are created), `~a.b.c` removes (the default applies).
Values: null, true/false, finite numbers, `[a,b]` lists (items typed by the schema, quotes optional), `{"k": v}`
JSON objects, anything else a string (surrounding '…' or "…" quotes stripped)."""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from .schema_node import SchemaNode, run_config_node

_INTEGER = re.compile(r"[+-]?\d+\Z")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_OVERRIDE = re.compile(r"~?[A-Za-z_$][\w$-]*(\.[\w$-]+)*(=|\Z)")
_MAX_SAFE = 2**53 - 1
_NOTHING = object()


class OverrideError(ValueError):
    """An override that cannot apply; the message names the argument and the key."""

    def __init__(self, text: str, key: str, detail: str) -> None:
        self.text, self.key, self.detail = text, key, detail
        super().__init__(f"override {text}: {key + ': ' if key else ''}{detail}")


@dataclass
class Override:
    text: str
    path: list[str]
    value: Any = field(default=_NOTHING)

    @property
    def removes(self) -> bool:
        return self.value is _NOTHING


def is_override(arg: str) -> bool:
    """`key=value` or `~key`? (Anything else, e.g. a file name, is not an override.)"""
    return bool(_OVERRIDE.match(arg)) and (arg.startswith("~") or "=" in arg)


def _branches(schema: SchemaNode) -> list[SchemaNode]:
    if schema.any_of is not None:
        return [b for s in schema.any_of for b in _branches(s)]
    if isinstance(schema.type, list):
        return [schema.model_copy(update={"type": t}) for t in schema.type]
    return [schema]


_TYPE_WORDS = {
    "null": "null",
    "boolean": "true or false",
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "array": "a list [a,b]",
    "object": 'an object {"k": v}',
}


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _describe(options: list[SchemaNode]) -> str:
    words: list[str] = []
    for b in options:
        if b.enum is not None:
            word = "one of " + ", ".join(_json(v) for v in b.enum)
        elif isinstance(b.type, str):
            word = _TYPE_WORDS.get(b.type, b.type)
        else:
            word = "any value"
        if word not in words:
            words.append(word)
    return " or ".join(words)


def _unquote(text: str) -> str | None:
    t = text.strip()
    if len(t) >= 2 and t[0] in "'\"" and t[-1] == t[0]:
        return t[1:-1]
    return None


def _split_list(inner: str) -> list[str] | None:
    if inner.strip() == "":
        return []
    items: list[str] = []
    depth, quote, start, i = 0, "", 0, 0
    while i < len(inner):
        c = inner[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(inner[start:i])
            start = i + 1
        if depth < 0:
            return None
        i += 1
    if quote or depth != 0:
        return None
    items.append(inner[start:])
    return [s.strip() for s in items]


def _is_bool(t: str) -> bool:
    return t.lower() in ("true", "false")


def _number(t: str) -> float | int:
    """JSON's reading of a number literal: an integral value is an int (as JavaScript's Number is for JSON)."""
    v = float(t)
    return int(v) if v.is_integer() and abs(v) <= _MAX_SAFE and _INTEGER.match(t) else v


def _untyped(text: str) -> Any:
    t = text.strip()
    q = _unquote(t)
    if q is not None:
        return q
    if t == "null":
        return None
    if _is_bool(t):
        return t.lower() == "true"
    if _NUMBER.match(t) and math.isfinite(float(t)):
        return _number(t)
    if t.startswith("[") and t.endswith("]"):
        items = _split_list(t[1:-1])
        if items is not None:
            return [_untyped(x) for x in items]
    if t.startswith("{"):
        try:
            return json.loads(t)
        except ValueError:
            pass
    return text


def type_value(schema: SchemaNode, text: str) -> tuple[Any, str | None]:
    """(value, None), or (None, what the field takes) when the text is not of its type."""
    options = _branches(schema)
    if all(b.type is None and b.enum is None for b in options):
        return _untyped(text), None
    t = text.strip()
    quoted = _unquote(t)
    for b in options:
        kind = b.type
        if b.enum is not None:
            want = quoted if quoted is not None else t
            for v in b.enum:
                if (isinstance(v, str) and v == want) or (not isinstance(v, str) and _json(v) == t):
                    return v, None
            continue
        if quoted is not None:
            if kind == "string":
                return quoted, None
            continue
        if kind == "null" and t == "null":
            return None, None
        if kind == "boolean" and _is_bool(t):
            return t.lower() == "true", None
        if kind == "integer" and _INTEGER.match(t) and abs(int(t)) <= _MAX_SAFE:
            return int(t), None
        if kind == "number" and _NUMBER.match(t) and math.isfinite(float(t)):
            return _number(t), None
        if kind == "array" and t.startswith("[") and t.endswith("]"):
            items = _split_list(t[1:-1])
            if items is None:
                return None, f"takes {_describe(options)}; {_json(text)} is not a well-formed list"
            out = []
            for i, item in enumerate(items):
                value, err = type_value(b.items or SchemaNode(), item)
                if err:
                    return None, f"item {i + 1}: {err}"
                out.append(value)
            return out, None
        if kind == "object" and t.startswith("{"):
            try:
                value = json.loads(t, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
            except ValueError:
                return None, f"takes {_describe(options)}; {_json(text)} is not a JSON object"
            if isinstance(value, dict):
                return value, None
    if any(b.type == "string" and b.enum is None for b in options):
        return text, None
    return None, f"takes {_describe(options)}; {_json(text)} is not one"


def _object_branch(schema: SchemaNode) -> SchemaNode | None:
    return next((b for b in _branches(schema) if b.type == "object"), None)


def _field_schema(root: SchemaNode, path: list[str]) -> tuple[SchemaNode | None, str | None]:
    node = root
    for i, key in enumerate(path):
        obj = _object_branch(node)
        here = ".".join(path[:i]) or "the run config"
        if obj is None:
            return None, f"{here} is not an object, so it has no field {key}"
        props = obj.properties or {}
        extra = obj.additional_properties
        if key in props:
            node = props[key]
        elif isinstance(extra, SchemaNode):
            node = extra
        elif extra is True:
            node = SchemaNode()
        else:
            return None, f"unknown key: {here} has {', '.join(k for k in props if k != '$schema')}"
    return node, None


def parse_override(text: str, schema: SchemaNode | None = None) -> Override:
    """One argument against the run config schema (or `schema`). Raises OverrideError naming the key."""
    if schema is None:
        schema = run_config_node()
    remove = text.startswith("~")
    eq = text.find("=")
    key = text[1 : eq if eq >= 0 else None] if remove else (text if eq < 0 else text[:eq])
    if not key or (not remove and eq < 0):
        raise OverrideError(text, key, "give key=value (or ~key to remove a field)")
    if remove and eq >= 0:
        raise OverrideError(text, key, "~key removes a field and takes no value")
    path = key.split(".")
    if any(p == "" for p in path):
        raise OverrideError(text, key, "an empty part in the key")
    if any(p.isdigit() for p in path):
        raise OverrideError(text, key, "list items cannot be set one by one: give the whole list, e.g. key=[a,b]")
    node, err = _field_schema(schema, path)
    if err:
        raise OverrideError(text, key, err)
    if remove:
        return Override(text, path)
    value, err = type_value(node or SchemaNode(), text[eq + 1 :])
    if err:
        raise OverrideError(text, key, err)
    return Override(text, path, value)


def apply_overrides(raw: object, overrides: list[Override]) -> object:
    """The raw (unvalidated) config with the overrides applied in order; a new object."""
    root = copy.deepcopy(raw if raw is not None else {})
    if not isinstance(root, dict):
        if overrides:
            raise OverrideError(overrides[0].text, ".".join(overrides[0].path), "the run config is not a JSON object")
        return root
    for o in overrides:
        node = root
        for i, key in enumerate(o.path[:-1]):
            nxt = node.get(key)
            if nxt is None:
                node[key] = nxt = {}
            elif not isinstance(nxt, dict):
                raise OverrideError(
                    o.text,
                    ".".join(o.path),
                    f"{'.'.join(o.path[: i + 1])} is {_json(nxt)} in the config, not an object",
                )
            node = nxt
        if o.removes:
            node.pop(o.path[-1], None)
        else:
            node[o.path[-1]] = o.value
    return root


def override_for(overrides: list[Override], path: list[Any]) -> Override | None:
    """The override that set `path` or a field above or below it (the last one), to name it in an error."""
    key = [str(p) for p in path]
    if not key:
        return None
    for o in reversed(overrides):
        n = min(len(key), len(o.path))
        if key[:n] == o.path[:n]:
            return o
    return None


def split_overrides(args: list[str]) -> list[str]:
    """Check that every extra argument of a trainer command is an override; the first that is not is an error."""
    for a in args:
        if not is_override(a):
            raise OverrideError(a, "", "not a key=value override (unknown argument)")
    return args
