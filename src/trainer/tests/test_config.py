
import pytest

from coa_trainer.base.config import ConfigError, default_config, load_config, validate_config
from coa_trainer.contracts.schemas import run_config_schema


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
    assert c.model.lora.model_dump() == {"r": 2, "alpha": 16, "dropout": 0.0,
                                  "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]}


@pytest.mark.parametrize("bad, where", [
    ({"stages": {"sft1": {"beta": -1}}}, "stages.sft1.beta"),
    ({"stagez": {}}, "stagez"),
    ({"device": "tpu"}, "device"),
    ({"stages": {"pretrain": {"steps": 1.5}}}, "stages.pretrain.steps"),
])
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
