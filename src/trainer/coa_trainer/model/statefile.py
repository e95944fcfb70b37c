"""A tree of tensors and plain values as one safetensors file that carries no code.

Why not `torch.save`: it pickles, and unpickling a file from a run directory runs whatever the file says (a
`__reduce__` that calls `os.system`), so anyone who can put a file in a shared runs/ folder would run code as the
user who resumes. Here the tensors are safetensors data (a JSON header of names, dtypes, shapes and offsets, read by
safetensors' own parser), and everything else — counters, scalars, optimiser settings, the tree's shape — is JSON
in the header's `__metadata__`. Reading a file can only produce tensors, numbers, strings, lists and dicts.

The tree codec: a tensor becomes {"$tensor": name} (its data stored under that name, with a CRC-32 of its bytes in
the header, so a flipped bit reads as corrupt rather than as a different model); a tuple {"$tuple": [...]}; a dict
whose keys are not all plain strings (an optimiser's parameter indices) {"$dict": [[key, value], ...]}; a float that
JSON cannot hold {"$float": "nan" | "inf" | "-inf"}. Anything else (an arbitrary object) is refused when saving."""

from __future__ import annotations

import json
import math
import os
import zlib
from pathlib import Path
from typing import Any

import torch

META_KEY = "coa_checkpoint"


class StateFileError(ValueError):
    """The file is not a readable state file: why, in words (truncated, not safetensors, a checksum mismatch …)."""


# ---------------------------------------------------------------------------------------------------- encoding


def _local(t: torch.Tensor) -> torch.Tensor:
    """A DTensor's own shard (FSDP2: each rank writes its shards), else the tensor itself; on the CPU, contiguous."""
    to_local = getattr(t, "to_local", None)
    if to_local is not None:
        t = to_local()
    return t.detach().to("cpu").contiguous()


def crc(t: torch.Tensor) -> int:
    if t.numel() == 0:
        return 0
    # an ndarray is a buffer; numpy's stubs do not declare __buffer__
    return zlib.crc32(t.reshape(-1).view(torch.uint8).numpy())  # pyright: ignore[reportArgumentType]


def encode(tree: object, tensors: dict[str, torch.Tensor], path: str = "", seen: dict | None = None) -> Any:
    """`tree` as JSON values; its tensors added to `tensors` under names derived from where they sit. A tensor met
    twice (tied embeddings: one storage under two names) is stored once and referred to from both places."""
    seen = {} if seen is None else seen
    if isinstance(tree, torch.Tensor):
        to_local = getattr(tree, "to_local", None)
        local = to_local() if to_local is not None else tree
        same = (
            (
                local.device,
                local.untyped_storage().data_ptr(),
                local.storage_offset(),
                tuple(local.shape),
                local.stride(),
                local.dtype,
            )
            if local.numel()
            else None
        )
        if same is not None and same in seen:
            return {"$tensor": seen[same]}
        name = path or "tensor"
        while name in tensors:
            name += "'"
        stored = _local(local)
        storage = (local.device, local.untyped_storage().data_ptr())
        if same is not None and storage in seen:  # another view of a storage already stored: its own copy
            stored = stored.clone()
        tensors[name] = stored
        if same is not None:
            seen[same] = name
            seen[storage] = name
        return {"$tensor": name}
    if isinstance(tree, bool) or tree is None or isinstance(tree, (int, str)):
        return tree
    if isinstance(tree, float):
        return tree if math.isfinite(tree) else {"$float": repr(tree)}
    if isinstance(tree, tuple):
        return {"$tuple": [encode(v, tensors, f"{path}.{i}", seen) for i, v in enumerate(tree)]}
    if isinstance(tree, list):
        return [encode(v, tensors, f"{path}.{i}", seen) for i, v in enumerate(tree)]
    if isinstance(tree, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in tree):
            return {k: encode(v, tensors, f"{path}.{k}" if path else k, seen) for k, v in tree.items()}
        return {
            "$dict": [
                [encode(k, tensors, path, seen), encode(v, tensors, f"{path}.{k}", seen)] for k, v in tree.items()
            ]
        }
    raise TypeError(
        f"a checkpoint holds tensors and plain values only; {path or 'the state'} is a {type(tree).__name__}"
    )


def decode(tree: object, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(tree, list):
        return [decode(v, tensors) for v in tree]
    if not isinstance(tree, dict):
        return tree
    tags = [k for k in tree if k.startswith("$")]
    if not tags:
        return {k: decode(v, tensors) for k, v in tree.items()}
    if len(tree) != 1:
        raise StateFileError(f"unknown entry {sorted(tree)[:3]}")
    tag, value = tags[0], tree[tags[0]]
    if tag == "$tensor" and isinstance(value, str) and value in tensors:
        return tensors[value]
    if tag == "$tuple" and isinstance(value, list):
        return tuple(decode(v, tensors) for v in value)
    if tag == "$dict" and isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value):
        out = {}
        for k, v in value:
            key = decode(k, tensors)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise StateFileError("a dictionary key that is not a plain value")
            out[key] = decode(v, tensors)
        return out
    if tag == "$float" and value in ("nan", "inf", "-inf"):
        return float(value)
    raise StateFileError(f"unknown entry {tag}: {str(value)[:40]}")


# ---------------------------------------------------------------------------------------------------- files


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_state_file(path: Path, tree: dict, info: dict, atomic: bool = True) -> Path:
    """`tree` (tensors and plain values) and `info` (plain JSON: stage, step …) into `path`, fsynced. `atomic`: written
    to a temporary name beside it and renamed over it, so a crash leaves the old file or the new one (a sharded
    checkpoint's files are written straight into a directory that is itself renamed once complete)."""
    from safetensors.torch import save_file

    tensors: dict[str, torch.Tensor] = {}
    encoded = encode(tree, tensors)  # fills `tensors`, whose checksums follow the tree in the header
    header = {**info, "tree": encoded, "crc32": {name: crc(t) for name, t in tensors.items()}}
    out = path.with_name(f".{path.name}.tmp") if atomic else path
    out.unlink(missing_ok=True)  # never write through whatever a crash (or anyone) left under that name
    save_file(tensors, str(out), metadata={META_KEY: json.dumps(header, allow_nan=False)})
    with open(out, "rb") as f:
        os.fsync(f.fileno())
    if atomic:
        os.replace(out, path)
        fsync_dir(path.parent)
    return path


def read_state_file(path: Path) -> tuple[dict, Any]:
    """(info, tree) of a state file; StateFileError says why it cannot be read (never anything but data is made)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            meta = f.metadata() or {}
            if META_KEY not in meta:
                raise StateFileError("it has no checkpoint header (a safetensors file, but not a checkpoint)")
            header = json.loads(meta[META_KEY])
            sums = header.get("crc32") if isinstance(header, dict) else None  # a damaged file may lack it
            if not isinstance(header, dict) or not isinstance(sums, dict):
                raise StateFileError("its header is not a checkpoint's")
            names = set(f.keys())
            if names != set(sums):
                raise StateFileError(f"its tensors ({len(names)}) are not the ones its header lists ({len(sums)})")
            tensors = {}
            for name in names:
                t = f.get_tensor(name)
                if crc(t) != sums[name]:
                    raise StateFileError(f"tensor {name} does not match its checksum (the file was damaged)")
                tensors[name] = t
            tree = decode(header.pop("tree", None), tensors)
    except StateFileError:
        raise
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:  # truncated, not safetensors, bad JSON, too deep
        raise StateFileError(f"{type(e).__name__}: {e}") from None
    header.pop("crc32")
    return header, tree


def read_state_header(path: Path, keys: tuple[str, ...]) -> tuple[dict, dict]:
    """(info, the tree's `keys`) without reading any tensor data: for entries that hold plain values only (another
    rank's copy of the schedule)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            header = json.loads((f.metadata() or {})[META_KEY])
        tree = header.pop("tree")
        header.pop("crc32", None)
        return header, {k: decode(tree[k], {}) for k in keys}
    except StateFileError:
        raise
    except (SafetensorError, OSError, ValueError, RuntimeError, KeyError, TypeError) as e:
        raise StateFileError(f"{type(e).__name__}: {e}") from None
