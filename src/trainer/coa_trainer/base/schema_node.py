"""The run config's JSON Schema (schemas/run-config.schema.json, from src/core/config.ts) read once as typed nodes:
the keywords the trainer's own walks over it use — the typing of `key=value` overrides (base/overrides.py) and the
defaults filled into a config (base/config.py). Checking a config against the schema is jsonschema's, on the file."""

from __future__ import annotations

from functools import cache

import pydantic

from ..contracts.schemas import run_config_schema


class SchemaNode(pydantic.BaseModel):
    """One node of a JSON Schema, with the keywords read here (the others — bounds, descriptions — are left out)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore", populate_by_name=True)
    ref: str | None = pydantic.Field(default=None, alias="$ref")
    defs: dict[str, SchemaNode] | None = pydantic.Field(default=None, alias="$defs")
    type: str | list[str] | None = None
    enum: list[pydantic.JsonValue] | None = None
    any_of: list[SchemaNode] | None = pydantic.Field(default=None, alias="anyOf")
    properties: dict[str, SchemaNode] | None = None
    additional_properties: bool | SchemaNode | None = pydantic.Field(default=None, alias="additionalProperties")
    items: SchemaNode | None = None
    default: pydantic.JsonValue = None

    @property
    def has_default(self) -> bool:
        """Whether the node has a `default` keyword (a default of null is one)."""
        return "default" in self.model_fields_set


@cache
def run_config_node() -> SchemaNode:
    """The run-config schema's root."""
    return SchemaNode.model_validate(run_config_schema())
