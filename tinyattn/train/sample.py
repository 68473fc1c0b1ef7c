"""``python -m tinyattn sample --checkpoint runs/<task>/``: generate with a trained model.

It loads the run's ``checkpoint.npz`` with the training code's own reader and checks (so a
missing, corrupt or foreign file gets the same clear error as ``--resume``), rebuilds the
model from the saved settings, and completes a prompt written in the task's vocabulary:

* digit tasks (reverse, copy, sort, addition): the prompt is the task's input, tokens with or
  without spaces (``"3 1 4 1 5 9 2 6 |"``, ``"123+456="``); by default a random one drawn
  with ``--seed``. Decoding is greedy (temperature 0), as the held-out accuracy measures, and
  the answer is printed next to the right one.
* chars: the prompt is text (default ``"The "``), sampled at temperature 0.8 from the 10 most
  likely characters.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, List, Optional

import numpy as np

from ..tensor import as_tensor
from . import checkpoint, loop
from .checkpoint import CHECKPOINT, CheckpointError
from .config import ConfigError, TrainConfig, finalize
from .tasks import make_task

__all__ = ["main", "build_parser", "load_run", "encode_prompt"]


def _number(kind: type, low: float, name: str):
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: expected a number, got {text!r}") \
                from None
        if not (math.isfinite(value) and value >= low):
            raise argparse.ArgumentTypeError(f"{name} must be a finite number >= {low}, got "
                                             f"{text}")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tinyattn sample",
        description="Generate with a model trained by `python -m tinyattn train`.")
    p.add_argument("--checkpoint", required=True, metavar="DIR",
                   help="the run's folder (runs/<task>/) or its checkpoint.npz")
    p.add_argument("--prompt", default=None,
                   help="digit tasks: e.g. '3 1 4 1 5 9 2 6 |' (default: a random one); "
                        "chars: text (default 'The ')")
    p.add_argument("--max-new-tokens", type=_number(int, 1, "--max-new-tokens"), default=None,
                   help="default: the answer's length (digit tasks), 200 (chars)")
    p.add_argument("--temperature", type=_number(float, 0, "--temperature"), default=None,
                   help="0 picks the most likely token; default 0 (digit tasks), 0.8 (chars)")
    p.add_argument("--top-k", type=_number(int, 1, "--top-k"), default=None,
                   help="sample from the k most likely tokens; default: all (digit tasks), "
                        "10 (chars)")
    p.add_argument("--seed", type=_number(int, 0, "--seed"), default=0,
                   help="random prompt and sampling seed, default 0")
    return p


def load_run(path: str):
    """(model, task, settings) of the run saved in ``path`` (a folder or its checkpoint),
    read and checked exactly as ``--resume`` reads it (checkpoint.read, then the run's own
    restore: every part present and finite, the weights fitting the saved settings)."""
    directory = (os.path.dirname(path) or ".") if os.path.isfile(path) else path
    if os.path.isfile(path) and os.path.basename(path) != CHECKPOINT:
        raise CheckpointError(f"--checkpoint {path}: expected a run folder or its "
                              f"{CHECKPOINT}, got another file")
    try:
        state = checkpoint.read(directory)
        config = TrainConfig(**checkpoint.saved_settings(state), quiet=True)
        try:
            finalize(config)
        except ConfigError as exc:
            raise checkpoint.damaged(directory, f"holds settings that cannot be used ({exc})") \
                from None
        task = make_task(config.task)
        if config.task == "chars":
            task = type(task)(block_size=config.block_size)
        model = loop._Run(config, directory, task, state, None).model
    except CheckpointError as exc:     # the reader names --resume; here the flag differs
        raise CheckpointError(str(exc).replace("--resume", "--checkpoint")) from None
    model.eval()
    return model, task, config


def encode_prompt(task: Any, prompt: str) -> np.ndarray:
    """The prompt's token ids; every character must be in the task's vocabulary (digit
    tasks ignore spaces between tokens)."""
    text = "".join(prompt.split()) if task.has_accuracy else prompt
    if not text:
        raise ValueError("--prompt is empty; give at least one token")
    index = {token: i for i, token in enumerate(task.vocab)}
    unknown = sorted({c for c in text if c not in index})
    if unknown:
        shown = " ".join(repr(t) for t in task.vocab) if task.has_accuracy else \
            f"{len(task.vocab)} characters"
        raise ValueError(f"--prompt has {', '.join(map(repr, unknown))}, not in the "
                         f"'{task.name}' vocabulary ({shown})")
    return np.array([index[c] for c in text], dtype=np.int64)


def _digit_report(task: Any, prompt: np.ndarray, completion: np.ndarray) -> List[str]:
    """The right answer and whether the model found it; or why there is none to compare."""
    separator = len(task.vocab) - 1            # '|' (reverse, copy, sort) or '=' (addition)
    if len(prompt) != task.prompt_len or prompt[-1] != separator or separator in prompt[:-1]:
        example = task.make_pairs(np.random.default_rng(0), 1)[0][0]
        return [f"note: '{task.name}' was trained on prompts like "
                f"'{' '.join(task.decode(example))}' ({task.prompt_len} tokens); this one is "
                f"outside what the model learned, so there is no right answer to compare"]
    right = task.solve(prompt[None, :])[0]
    verdict = "right" if np.array_equal(completion[:len(right)], right) else "wrong"
    return [f"expected: {' '.join(task.decode(right))} ({verdict})"]


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        model, task, config = load_run(args.checkpoint)
        digits = task.has_accuracy
        if args.prompt is None:
            prompt = task.make_pairs(np.random.default_rng(args.seed), 1)[0][0] if digits \
                else encode_prompt(task, "The ")
        else:
            prompt = encode_prompt(task, args.prompt)
    except (CheckpointError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    new = args.max_new_tokens or (task.answer_len if digits else 200)
    temperature = args.temperature if args.temperature is not None else (0.0 if digits else 0.8)
    top_k = args.top_k if args.top_k is not None else (None if digits else 10)
    ids = model.generate(as_tensor(prompt[None, :]), new, temperature=temperature, top_k=top_k,
                         generator=np.random.default_rng(args.seed)).numpy()[0]
    completion = ids[len(prompt):]
    if digits:
        print(f"{' '.join(task.decode(prompt))} {' '.join(task.decode(completion))}")
        for line in _digit_report(task, prompt, completion):
            print(line)
    else:
        print("".join(task.decode(ids)))
    return 0
