"""``python -m tinyattn train`` / ``python examples/train_toy.py``: the toy training script."""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from .. import backend
from .loop import CheckpointError, TrainConfig, train
from .tasks import TASKS

__all__ = ["main", "build_parser"]

DEFAULTS = TrainConfig()


def _int_at_least(low: int):
    """An argparse type: a whole number >= low, with a message that says so."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") \
                from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value
    return parse


_positive_int, _non_negative_int = _int_at_least(1), _int_at_least(0)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {value}")
    return value


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """Every flag defaults to None so that a resumed run can tell what was typed; the real
    defaults (TrainConfig's) are filled in afterwards and shown in --help."""
    d = DEFAULTS
    p = argparse.ArgumentParser(
        prog="python -m tinyattn train",
        description="Train a small transformer on a toy task and watch attention learn. "
                    "Writes metrics.json, loss.png, attention.png, positional.png and a "
                    "checkpoint to --out.")
    p.add_argument("--task", choices=list(TASKS),
                   help="reverse (default), copy, sort, addition, or chars (character-level "
                        "language model on Python's pydoc text)")
    p.add_argument("--steps", type=_positive_int, help=f"default {d.steps}")
    p.add_argument("--batch-size", type=_positive_int, help=f"default {d.batch_size}")
    p.add_argument("--d-model", type=_positive_int, help=f"default {d.d_model}")
    p.add_argument("--heads", type=_positive_int, help=f"default {d.heads}")
    p.add_argument("--layers", type=_positive_int, help=f"default {d.layers}")
    p.add_argument("--lr", type=_positive_float, help=f"peak learning rate, default {d.lr}")
    p.add_argument("--warmup", type=_non_negative_int, help=f"warmup steps, default {d.warmup}")
    p.add_argument("--dropout", type=_probability, help=f"default {d.dropout}")
    p.add_argument("--pos-encoding", choices=["learned", "sinusoidal", "rope", "alibi", "none"],
                   help=f"default {d.pos_encoding}")
    p.add_argument("--attn-impl", choices=["plain", "tiled"],
                   help="tiled: memory-efficient attention (docs/tiled_attention.md)")
    p.add_argument("--block-size", type=_positive_int,
                   help=f"context length for --task chars, default {d.block_size}, at most "
                        f"{MAX_CHARS_CONTEXT}")
    p.add_argument("--eval-every", type=_positive_int, help=f"default {d.eval_every}")
    p.add_argument("--seed", type=_non_negative_int, help=f"default {d.seed}")
    p.add_argument("--device", choices=["cpu", "cuda"], help="default cpu")
    p.add_argument("--dtype", choices=["float32", "float64"], help="default float32")
    p.add_argument("--out", default=None, help="output folder (default runs/<task>)")
    p.add_argument("--resume", metavar="DIR", default=None,
                   help="continue the run saved in DIR (its checkpoint.npz); --steps may "
                        "raise the total, other settings come from the checkpoint")
    p.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    return p


MAX_CHARS_CONTEXT = 2048
_FLAG_FIELDS = ("task", "steps", "batch_size", "d_model", "heads", "layers", "lr", "warmup",
                "dropout", "pos_encoding", "attn_impl", "block_size", "eval_every", "seed",
                "device", "dtype")


def _check_combination(parser: argparse.ArgumentParser, config: TrainConfig) -> None:
    """Settings that are fine alone but not together: say so before any work starts."""
    if config.d_model % config.heads != 0:
        parser.error(f"--d-model {config.d_model} must be divisible by --heads {config.heads}")
    if config.pos_encoding == "rope" and (config.d_model // config.heads) % 2 != 0:
        parser.error(f"--pos-encoding rope rotates pairs of features, so d_model / heads = "
                     f"{config.d_model // config.heads} must be even")
    if config.attn_impl == "tiled" and config.dropout > 0:
        parser.error("--attn-impl tiled has no attention dropout; use --dropout 0 with it")
    if config.attn_impl == "tiled" and config.pos_encoding == "alibi":
        parser.error("--pos-encoding alibi adds a bias to the scores, which only "
                     "--attn-impl plain supports")
    if config.task == "chars" and config.block_size > MAX_CHARS_CONTEXT:
        parser.error(f"--block-size {config.block_size} is too long for the chars text; use at "
                     f"most {MAX_CHARS_CONTEXT}")
    if config.warmup >= config.steps and not config.extra.get("resume"):
        parser.error(f"--warmup {config.warmup} must be less than --steps {config.steps}")
    if config.device == "cuda" and not backend.cuda_is_available():
        parser.error(f"--device cuda: no usable GPU ({backend.cuda_unavailable_reason()}); "
                     f"{backend.CUDA_INSTALL_HINT}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.resume and args.out and args.out != args.resume:
        parser.error("--resume DIR continues in DIR; leave out --out (or give the same folder)")
    given = {name for name in _FLAG_FIELDS if getattr(args, name) is not None}
    config = TrainConfig(out=args.resume or args.out, quiet=args.quiet)
    for name in given:
        setattr(config, name, getattr(args, name))
    config.extra = {"resume": bool(args.resume), "given": given}
    _check_combination(parser, config)
    try:
        metrics = train(config)
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 130 if metrics.get("interrupted") else 0
