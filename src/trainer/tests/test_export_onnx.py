"""export-onnx on a tiny random model: the graph has per-layer past/present KV inputs and outputs with dynamic
batch/sequence/past dims, the tokenizer and coa_model.json land beside it, and a cached decode through the
exported graph reproduces PyTorch's logits (the export itself also checks this and prints max |Δ|)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx.reference import ReferenceEvaluator

from coa_trainer.base.config import validate_config
from coa_trainer.model.load import Runtime, load_model, write_embedded_model

from conftest import REPO

SPEC = {
    "family": "qwen2",
    "hidden_size": 32,
    "num_layers": 2,
    "num_heads": 4,
    "num_kv_heads": 2,
    "intermediate_size": 64,
    "max_position": 64,
}
TEXTS = ["question : who wrote it ? <think> x </think> <search> who wrote </search> <answer> borges </answer>"]


def test_export_onnx_cli_kv_graph(tmp_path):
    model_dir = write_embedded_model(validate_config({"model": {"embedded": SPEC}}), TEXTS, tmp_path / "m", seed=1)
    out = tmp_path / "x" / "model.onnx"
    res = subprocess.run(
        [sys.executable, "-m", "coa_trainer", "export-onnx", "--checkpoint", str(model_dir), "-o", str(out)],
        cwd=REPO / "src" / "trainer",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "max |Δ| vs PyTorch" in res.stdout
    meta = json.loads((out.parent / "coa_model.json").read_text())
    assert meta["kv"] == {"layers": 2, "kv_heads": 2, "head_dim": 8}
    assert meta["verified_max_abs_diff"] <= 1e-4
    assert meta["tag_ids"]["</search>"] != meta["tag_ids"]["<search>"]
    assert (out.parent / "tokenizer.json").is_file()

    proto = onnx.load(str(out))
    ins = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in proto.graph.input}
    outs = {o.name: [d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim] for o in proto.graph.output}
    assert ins["past_key_1"] == ["batch", 2, "past_sequence", 8]
    assert outs["present_value_0"] == ["batch", 2, "total_sequence", 8]
    assert isinstance(outs["logits"][1], str)

    # Batch 2, prefill 3 tokens from an empty past, then one cached step: same logits as PyTorch's full pass.
    model, _ = load_model(model_dir, Runtime(torch.device("cpu"), None), trainable=False)
    model.eval()
    ids = np.array([[5, 9, 12, 4], [7, 3, 11, 6]], dtype=np.int64)
    ev = ReferenceEvaluator(proto)
    names = [i.name for i in proto.graph.input]
    past = [np.zeros((2, 2, 0, 8), dtype=np.float32) for _ in range(4)]
    got = []
    for lo, hi in ((0, 3), (3, 4)):
        feed = [ids[:, lo:hi], np.ones((2, hi), dtype=np.int64), np.tile(np.arange(lo, hi), (2, 1)), *past]
        res = ev.run(None, dict(zip(names, feed)))
        got.append(res[0])
        past = res[1:]
    with torch.no_grad():
        ref = model(input_ids=torch.from_numpy(ids)).logits.numpy()
    assert np.abs(np.concatenate(got, axis=1) - ref).max() <= 1e-4


def test_export_onnx_missing_dir_is_clear_error(tmp_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "coa_trainer",
            "export-onnx",
            "--checkpoint",
            str(tmp_path / "nope"),
            "-o",
            str(tmp_path / "m.onnx"),
        ],
        cwd=REPO / "src" / "trainer",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 1
    assert "does not exist" in res.stderr


def test_export_onnx_never_replaces_a_fifo_or_device_and_writes_through_a_link(tmp_path):
    """The export renames a temporary file onto -o, which would turn a FIFO (or, as root, /dev/full) into a plain file
    and replace a symbolic link by the model. So a link's target is written and kept as a link; the rest is a
    one-line error before any work."""
    import os

    from coa_trainer.model.export_onnx import model_file_target

    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    res = subprocess.run(
        [sys.executable, "-m", "coa_trainer", "export-onnx", "--checkpoint", str(tmp_path / "none"), "-o", str(fifo)],
        cwd=REPO / "src" / "trainer",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [
        f"export-onnx: {fifo}: is not a regular file (a directory, FIFO or device); give a model.onnx path as -o"
    ]
    assert fifo.is_fifo()
    for node in ("/dev/null", "/dev/full"):
        with pytest.raises(ValueError, match="is not a regular file"):
            model_file_target(Path(node))
    real = tmp_path / "real" / "model.onnx"
    real.parent.mkdir()
    real.write_bytes(b"old")
    link = tmp_path / "model.onnx"
    link.symlink_to(real)
    assert model_file_target(link) == real.resolve()
    dangling = tmp_path / "dangling.onnx"
    dangling.symlink_to(tmp_path / "gone.onnx")
    with pytest.raises(ValueError, match="symbolic link to a missing file"):
        model_file_target(dangling)
