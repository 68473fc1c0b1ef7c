"""``python -m tinyattn train`` / ``python examples/train_toy.py``: the toy training script."""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from .. import backend
from .loop import MODEL_FIELDS, CheckpointError, TrainConfig, train
from .tasks import TASKS

__all__ = ["main", "build_parser"]

DEFAULTS = TrainConfig()


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {value}")
    return value


def _probability(text: str) -> float:
    value = float(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tinyattn train",
        description="Train a small transformer on a toy task and watch attention learn. "
                    "Writes metrics.json, loss.png, attention.png, positional.png and a "
                    "checkpoint to --out.")
    p.add_argument("--task", choices=list(TASKS), default=DEFAULTS.task,
                   help="reverse (default), copy, sort, addition, or chars (character-level "
                        "language model on Python's pydoc text)")
    p.add_argument("--steps", type=_positive_int, default=DEFAULTS.steps)
    p.add_argument("--batch-size", type=_positive_int, default=DEFAULTS.batch_size)
    p.add_argument("--d-model", type=_positive_int, default=DEFAULTS.d_model)
    p.add_argument("--heads", type=_positive_int, default=DEFAULTS.heads)
    p.add_argument("--layers", type=_positive_int, default=DEFAULTS.layers)
    p.add_argument("--lr", type=_positive_float, default=DEFAULTS.lr)
    p.add_argument("--warmup", type=int, default=DEFAULTS.warmup)
    p.add_argument("--dropout", type=_probability, default=DEFAULTS.dropout)
    p.add_argument("--pos-encoding", choices=["learned", "sinusoidal", "rope", "alibi"],
                   default=DEFAULTS.pos_encoding)
    p.add_argument("--attn-impl", choices=["plain", "tiled"], default=DEFAULTS.attn_impl,
                   help="tiled: memory-efficient attention (docs/tiled_attention.md)")
    p.add_argument("--block-size", type=_positive_int, default=DEFAULTS.block_size,
                   help="context length for --task chars")
    p.add_argument("--eval-every", type=_positive_int, default=DEFAULTS.eval_every)
    p.add_argument("--seed", type=int, default=DEFAULTS.seed)
    p.add_argument("--device", choices=["cpu", "cuda"], default=DEFAULTS.device)
    p.add_argument("--dtype", choices=["float32", "float64"], default=DEFAULTS.dtype)
    p.add_argument("--out", default=None, help="output folder (default runs/<task>)")
    p.add_argument("--resume", metavar="DIR", default=None,
                   help="continue the run saved in DIR (its checkpoint.npz)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    given = {a.dest for a in parser._actions  # flags the user typed, to check against a resume
             if any(opt in (argv if argv is not None else sys.argv[1:])
                    for opt in a.option_strings)}
    if args.d_model % args.heads != 0:
        parser.error(f"--d-model {args.d_model} must be divisible by --heads {args.heads}")
    if args.seed < 0:
        parser.error(f"--seed must be >= 0, got {args.seed}")
    if args.warmup < 0:
        parser.error(f"--warmup must be >= 0, got {args.warmup}")
    if args.device == "cuda" and not backend.cuda_is_available():
        parser.error(f"--device cuda: no usable GPU ({backend.cuda_unavailable_reason()}); "
                     f"{backend.CUDA_INSTALL_HINT}")
    config = TrainConfig(task=args.task, steps=args.steps, batch_size=args.batch_size,
                         d_model=args.d_model, heads=args.heads, layers=args.layers,
                         lr=args.lr, warmup=args.warmup, dropout=args.dropout,
                         pos_encoding=args.pos_encoding, attn_impl=args.attn_impl,
                         block_size=args.block_size, seed=args.seed, device=args.device,
                         dtype=args.dtype, eval_every=args.eval_every,
                         out=args.resume or args.out, quiet=args.quiet)
    if args.resume and args.out and args.out != args.resume:
        parser.error("--resume DIR continues in DIR; leave out --out (or give the same folder)")
    config.extra = {"resume": bool(args.resume),
                    "given": {k for k in MODEL_FIELDS if k.replace("_", "") in
                              {g.replace("_", "") for g in given}}}
    try:
        metrics = train(config)
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 130 if metrics.get("interrupted") else 0
