"""Where a pretrained model's files are: a local folder, or a Hugging Face Hub repo id.

``resolve_pretrained("path/to/folder")`` checks the folder and returns it.
``resolve_pretrained("sentence-transformers/all-MiniLM-L6-v2")`` downloads the repo's files
through ``huggingface_hub`` (the optional extra: ``pip install "tinyattn[hub]"``) into its
cache and returns that folder; without the package it says how to get it. tinyattn never
downloads anything else, and the test suite never downloads at all.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Optional, Sequence

__all__ = ["resolve_pretrained", "read_json", "PretrainedError", "HUB_HINT"]

HUB_HINT = ('pip install "tinyattn[hub]" (it installs huggingface_hub) to download from the '
            'Hugging Face Hub, or pass the path of a local folder in the Hugging Face layout')
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
# What tinyattn reads: configs, vocabularies, weights (never pickles such as pytorch_model.bin).
DEFAULT_PATTERNS = ("*.json", "*.txt", "*.safetensors", "*/*.json")


class PretrainedError(ValueError):
    """A pretrained model's folder or config is missing something, or asks for what tinyattn
    does not support."""


def resolve_pretrained(name_or_path: Any, patterns: Sequence[str] = DEFAULT_PATTERNS,
                       revision: Optional[str] = None) -> str:
    """The local folder that holds the model ``name_or_path`` (a folder or a Hub repo id)."""
    path = os.fspath(name_or_path)
    if os.path.isdir(path):
        return path
    if os.path.exists(path):
        raise PretrainedError(f"{path} is a file; pass the folder that holds it (the folder "
                              f"with config.json and the weights)")
    if not _REPO_ID.match(path) or path.startswith((".", "/")):
        raise FileNotFoundError(f"{path}: no such folder (a pretrained model is a folder in "
                                f"the Hugging Face layout: config.json, model.safetensors, "
                                f"tokenizer files)")
    try:
        import huggingface_hub  # noqa: PLC0415 - optional extra
    except ImportError:
        raise FileNotFoundError(f"{path!r} is not a local folder, and fetching it as a Hub "
                                f"repo id needs huggingface_hub: {HUB_HINT}") from None
    try:
        return huggingface_hub.snapshot_download(repo_id=path, revision=revision,
                                                 allow_patterns=list(patterns))
    except Exception as exc:  # network, unknown repo, gated repo: say which, and what to do
        raise FileNotFoundError(f"{path!r} is not a local folder (there is no {path}/ here), "
                                f"and downloading it as a Hugging Face Hub repo id failed "
                                f"({type(exc).__name__}: {exc}). If you meant a folder, check "
                                f"the path (or download it there first, e.g. hf download "
                                f"<repo id> --local-dir {path}); if you meant a repo id, check "
                                f"it and your connection") from None


def read_json(folder: str, name: str, required: bool = True, allow_list: bool = False) -> Any:
    """``folder/name`` parsed as a JSON object (or, with ``allow_list``, a list); None when
    absent and not required."""
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        if required:
            raise PretrainedError(f"{folder} has no {name}; a model folder in the Hugging Face "
                                  f"layout has one")
        return None
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PretrainedError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(data, (dict, list) if allow_list else dict):
        raise PretrainedError(f"{path} must hold a JSON object ({{...}}), got a "
                              f"{type(data).__name__}")
    return data


def weight_files(folder: str, missing_hint: str = "") -> List[str]:
    """The safetensors file(s) of a checkpoint folder in the Hugging Face layout: its
    ``model.safetensors``, or every shard its ``model.safetensors.index.json`` lists; else a
    PretrainedError saying what the folder has instead (``missing_hint``: how to get them)."""
    single = os.path.join(folder, "model.safetensors")
    if os.path.isfile(single):
        return [single]
    index = read_json(folder, "model.safetensors.index.json", required=False)
    if index is not None:
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(weight_map, dict) or not weight_map:
            raise PretrainedError(f"{folder}/model.safetensors.index.json has no weight_map")
        shards = sorted(set(weight_map.values()))
        for shard in shards:
            if not isinstance(shard, str) or os.path.basename(shard) != shard:
                raise PretrainedError(f"{folder}: the shard name {shard!r} is not a file name")
            if not os.path.isfile(os.path.join(folder, shard)):
                raise PretrainedError(f"{folder}: shard {shard} listed in "
                                      f"model.safetensors.index.json is missing")
        return [os.path.join(folder, shard) for shard in shards]
    found = ", ".join(sorted(os.listdir(folder))) or "nothing"
    pickled = [n for n in ("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack")
               if os.path.isfile(os.path.join(folder, n))]
    convert = (f" Convert {', '.join(pickled)} once with transformers "
               f"(AutoModel.from_pretrained(folder).save_pretrained(folder, "
               f"safe_serialization=True)) or download the safetensors version."
               if pickled else "")
    raise PretrainedError(f"{folder} has no model.safetensors (it has {found}); tinyattn reads "
                          f"weights only in the safetensors format, which cannot run code."
                          f"{convert}{(' ' + missing_hint) if missing_hint else ''}")


def load_weights(folder: str, mmap: bool = True, missing_hint: str = ""
                 ) -> Dict[str, Any]:
    """name -> array from every safetensors file of a checkpoint folder (``weight_files``);
    a name stored in two shards is an error, not a silent overwrite."""
    from .safetensors import load_safetensors  # noqa: PLC0415 - a sibling module
    weights: Dict[str, Any] = {}
    for path in weight_files(folder, missing_hint):
        for name, array in load_safetensors(path, mmap=mmap).items():
            if name in weights:
                raise PretrainedError(f"{folder}: {name} appears in two shards")
            weights[name] = array
    return weights

