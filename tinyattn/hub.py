"""Where a pretrained model's files are: a local folder, or a Hugging Face Hub id.

``resolve_pretrained("path/to/folder", ...)`` returns the folder. A name that is not a folder
and looks like a Hub id (``"gpt2"``, ``"openai-community/gpt2"``) is downloaded with
``huggingface_hub`` (the optional extra: ``pip install "tinyattn[hub]"``) into its cache, and
the cached folder is returned. Without ``huggingface_hub`` the error says how to get it, or
how to download the files by hand. Nothing else in tinyattn touches the network.
"""
from __future__ import annotations

import os
import re
from typing import Sequence

__all__ = ["resolve_pretrained"]

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


def resolve_pretrained(path: str, files: Sequence[str], who: str) -> str:
    """The local folder holding ``files`` for ``path`` (a folder or a Hub id)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{who}: path must be a folder or a Hub id string, got "
                        f"{type(path).__name__}")
    path = os.fspath(path)
    if os.path.isdir(path):
        return path
    if os.path.exists(path):
        raise NotADirectoryError(f"{who}: {path!r} is a file; pass the folder that holds "
                                 f"{', '.join(files)}")
    if not _HUB_ID.match(path) or path.startswith((".", "~")) or path.count("/") > 1:
        raise FileNotFoundError(f"{who}: no folder {path!r}; pass a folder that holds "
                                f"{', '.join(files)}, or a Hugging Face Hub id such as 'gpt2'")
    try:
        from huggingface_hub import snapshot_download  # noqa: PLC0415 - optional extra
    except ImportError:
        raise FileNotFoundError(
            f"{who}: {path!r} is not a local folder, and downloading it as a Hugging Face Hub "
            f"id needs huggingface_hub: pip install \"tinyattn[hub]\" (or download the files "
            f"yourself: huggingface-cli download {path} {' '.join(files)} --local-dir "
            f"models/{path.split('/')[-1]}, then pass that folder)") from None
    try:
        return snapshot_download(repo_id=path, allow_patterns=list(files))
    except Exception as err:  # noqa: BLE001 - network, auth, missing repo: one clear message
        raise FileNotFoundError(f"{who}: could not download {path!r} from the Hugging Face "
                                f"Hub ({type(err).__name__}: {err}); check the id and your "
                                f"connection, or pass a local folder") from None
