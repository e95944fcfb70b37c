import base64
import json
import re

import pytest

from coa_trainer.base.config import ConfigError, default_config, load_config, validate_config
from coa_trainer.contracts.schemas import run_config_schema
from conftest import REPO


def test_defaults_come_from_the_schema():
    c = default_config()
    schema = run_config_schema()
    assert c.seed == schema["properties"]["seed"]["default"]
    assert c.stages.sft1.alpha == 0.2
    assert c.stages.sft2.coa_cot_ratio == 5
    assert c.model.path is None and c.model.lora is None


def test_partial_sections_are_filled():
    c = validate_config({"stages": {"sft1": {"beta": 3}}, "model": {"lora": {"r": 2}}})
    assert c.stages.sft1.beta == 3
    assert c.stages.sft1.alpha == 0.2  # default beside an explicit value
    assert c.model.lora.model_dump() == {
        "r": 2,
        "alpha": 16,
        "dropout": 0.0,
        "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"],
    }


@pytest.mark.parametrize(
    "bad, where",
    [
        ({"stages": {"sft1": {"beta": -1}}}, "stages.sft1.beta"),
        ({"stagez": {}}, "stagez"),
        ({"device": "tpu"}, "device"),
        ({"stages": {"pretrain": {"steps": 1.5}}}, "stages.pretrain.steps"),
    ],
)
def test_bad_configs_name_the_field(bad, where):
    with pytest.raises(ConfigError) as e:
        validate_config(bad, "run.json")
    assert where in str(e.value) and "run.json" in str(e.value)


def test_invalid_json_names_line_and_column(tmp_path):
    p = tmp_path / "run.json"
    p.write_text('{\n  "seed": 1,\n  oops\n}')
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert f"{p}:3:3" in str(e.value)


def test_a_config_file_that_cannot_be_used_is_one_error_naming_file_line_and_column(tmp_path):
    """Python's json accepts NaN and Infinity (an lr of Infinity trained every weight to NaN and finished "ok"); a
    byte order mark, invalid UTF-8 or 100k-level nesting gave a traceback."""
    cases = {
        "inf.json": (
            b'{"seed": 1,\n "stages": {"sft2": {"lr": Infinity}}}',
            r"inf\.json:2:28: Infinity is not a number",
        ),
        "nan.json": (b'{"name": "NaN", "seed": NaN}', r"nan\.json:1:25: NaN is not a number"),
        "utf8.json": (b'{"seed": 1, "name": "caf\xe9"}', r"utf8\.json:1:25: not UTF-8 \(byte 0xe9\)"),
        "deep.json": (b"[" * 100_000 + b"]" * 100_000, r"deep\.json:1:65: nested deeper than 64 levels"),
    }
    for name, (data, message) in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(ConfigError, match=message):
            load_config(p)
    bom = tmp_path / "bom.json"
    bom.write_bytes('\ufeff{"seed": 3}'.encode())
    assert load_config(bom).seed == 3  # an editor's byte order mark is not part of the JSON


RUN_CONFIG_VECTORS = json.loads((REPO / "test" / "conformance" / "run-configs.json").read_text(encoding="utf-8"))[
    "cases"
]


@pytest.mark.parametrize("case", RUN_CONFIG_VECTORS, ids=[c["name"] for c in RUN_CONFIG_VECTORS])
def test_run_config_files_read_as_the_core_reads_them(case, tmp_path):
    """The shared vectors the core's loadRunConfig runs too (test/unit/core/conformance.test.ts): one finite-number
    rule, one UTF-8/BOM rule, one nesting bound and the model's shape rules, so a config `coa data check` passes is
    one the trainer takes, and one it refuses the trainer refuses at the same place."""
    p = tmp_path / "run.json"
    p.write_bytes(case["text"].encode() if "text" in case else base64.b64decode(case["base64"]))
    want = case["expect"]
    if want.get("ok"):
        load_config(p)
        return
    with pytest.raises(ConfigError) as e:
        load_config(p)
    message = str(e.value)
    err = want["error"]
    if "line" in err:
        assert message.startswith(f"{p}:{err['line']}:{err['column']}: "), message
    if "field" in err:
        fields = re.findall(rf"^{re.escape(str(p))}: ([^:]+): ", message, re.M)
        assert fields[:1] == [err["field"]], message


def test_defaults_are_filled_through_a_ref_to_the_schemas_defs():
    """zod writes a schema used twice once, under $defs, and refers to it: the defaults inside it are filled where it
    is referred to (an object branch of anyOf included); a $ref that names no definition is a ConfigError."""
    from coa_trainer.base.config import fill_defaults
    from coa_trainer.base.schema_node import SchemaNode

    root = SchemaNode.model_validate(
        {
            "$defs": {"Opt": {"type": "object", "properties": {"lr": {"default": 0.1}, "eps": {"default": None}}}},
            "type": "object",
            "properties": {
                "a": {"$ref": "#/$defs/Opt"},
                "b": {"anyOf": [{"$ref": "#/$defs/Opt"}, {"type": "null"}], "default": None},
                "c": {"default": [1]},
            },
        }
    )
    assert fill_defaults({"a": {}, "b": {"lr": 1}}, root, root) == {
        "a": {"lr": 0.1, "eps": None},
        "b": {"lr": 1, "eps": None},
        "c": [1],
    }
    assert fill_defaults({"b": None}, root, root) == {"b": None, "c": [1]}
    broken = SchemaNode.model_validate({"type": "object", "properties": {"a": {"$ref": "#/$defs/Gone"}}})
    with pytest.raises(ConfigError, match="Gone"):
        fill_defaults({"a": {}}, broken, broken)
