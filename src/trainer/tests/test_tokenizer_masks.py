"""Tokenizer properties and the SFT-2 / SFT-3 loss masks, checked on every training sample."""

import pytest

from coa_trainer.data.benchmark import generate, join_segments
from coa_trainer.base.config import validate_config
from coa_trainer.data.samples import encode_segments, prompt_text, sft_stream
from coa_trainer.data.dialects import all_tags, tags
from coa_trainer.model.load import write_embedded_model, load_tokenizer
from coa_trainer.data.benchmark import vocabulary_texts
from conftest import TINY, observed


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    config = validate_config(TINY)
    bench = observed(generate(config.benchmark, config.seed))
    d = write_embedded_model(config, vocabulary_texts(bench, config), tmp_path_factory.mktemp("m") / "init", 0)
    return config, bench, load_tokenizer(d)


def test_every_tag_is_one_special_token(setup):
    _, _, tok = setup
    for tag in all_tags():
        ids = tok.encode(tag, add_special_tokens=False)
        assert len(ids) == 1 and ids[0] != tok.unk_token_id, tag
        assert tag in tok.all_special_tokens
    # a tag glued to words still splits off as one token
    ids = tok.encode("<think>x</think>", add_special_tokens=False)
    assert tok.convert_ids_to_tokens(ids)[0] == "<think>" and tok.convert_ids_to_tokens(ids)[-1] == "</think>"


def test_oracle_text_round_trips_without_unknown_tokens(setup):
    config, bench, tok = setup
    t = tags("coa")
    for q in bench.questions:
        text = join_segments(bench.oracle(q, t))
        ids = tok.encode(text, add_special_tokens=False)
        assert tok.unk_token_id not in ids
        again = tok.encode(tok.decode(ids, skip_special_tokens=False), add_special_tokens=False)
        assert again == ids, q.question


def test_segment_encoding_equals_whole_text_encoding_with_offsets(setup):
    config, bench, tok = setup
    t = tags("coa")
    for q in bench.questions[:40]:
        segs = bench.oracle(q, t)
        e = encode_segments(tok, prompt_text(config, q.question), segs)
        assert e.ids == tok.encode(e.response, add_special_tokens=False)
        for tid, off in zip(e.ids, e.offsets):
            piece = tok.convert_ids_to_tokens(tid)
            assert e.response[off : off + len(piece)].lower() == piece


def _observation_spans(ids: list[int], open_id: int, close_id: int) -> set[int]:
    """Independent of the masking code: positions from each observation open tag to its close tag."""
    inside, out = False, set()
    for i, tid in enumerate(ids):
        if tid == open_id:
            inside = True
        if inside:
            out.add(i)
        if tid == close_id:
            inside = False
    return out


@pytest.mark.parametrize("stage", ["sft2", "sft3"])
def test_masks_for_every_training_sample(setup, stage):
    config, bench, tok = setup
    t = tags("coa")
    stream = sft_stream(bench, tok, config, t, stage, config.seed)
    open_id, close_id = tok.convert_tokens_to_ids(t.obs_open), tok.convert_tokens_to_ids(t.obs_close)
    samples = stream.take(0, stream.epoch_size() * 2)  # two epochs: every CoA and every sampled CoT trajectory
    n_obs = 0
    for e in samples:
        assert len(e.loss_mask) == len(e.ids)
        obs = _observation_spans(e.ids, open_id, close_id)
        n_obs += len(obs)
        masked = {i for i, m in enumerate(e.loss_mask) if m == 0}
        if stage == "sft2":
            assert masked == obs, "exactly the observation tokens (tags included) are masked"
        else:
            assert masked == set(), "SFT-3 trains on every response token"
        assert all(m == 0 for m in e.target_mask[: len(e.prompt_ids)]), "the prompt never trains"
    assert n_obs > 0


def test_sft2_mix_ratio(setup):
    config, bench, tok = setup
    stream = sft_stream(bench, tok, config, tags("coa"), "sft2", config.seed)
    items = stream.take(0, stream.epoch_size())
    coa = sum(1 for e in items if e.meta.coa)
    cot = len(items) - coa
    assert cot > 0 and abs(coa / cot - config.stages.sft2.coa_cot_ratio) < 1.0
