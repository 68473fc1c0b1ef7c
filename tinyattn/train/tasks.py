"""Toy tasks for the training script, as next-token prediction for a decoder-only model.

A sequence task is a prompt followed by its answer, e.g. reverse: ``3 1 4 1 5 9 2 6 | 6 2 9 5
1 4 1 3``. The model reads ``full[:-1]`` and predicts ``full[1:]``; only the answer positions
are scored (the prompt's targets are ``IGNORE``), so the loss measures the task, not the
random prompt. Exact match means every answer token right under teacher forcing, which is the
same as greedy decoding getting the whole answer right (if every step's argmax is right given
a right prefix, greedy decoding reproduces that prefix step by step, and conversely).

``chars`` is a character-level language model on the text of Python's own documentation
topics (``pydoc_data.topics``, shipped with every Python), so nothing is downloaded.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

__all__ = ["IGNORE", "SequenceTask", "CharTask", "make_task", "TASKS"]

IGNORE = -100  # cross_entropy's ignore_index
DIGITS = [str(d) for d in range(10)]


@dataclass
class SequenceTask:
    """A prompt -> answer task over a small vocabulary."""

    name: str
    vocab: List[str]
    prompt_len: int                     # tokens in the prompt, separator included
    answer_len: int
    make_pairs: Callable[[np.random.Generator, int], Tuple[np.ndarray, np.ndarray]]
    solve: Callable[[np.ndarray], np.ndarray]   # prompts (B, prompt_len) -> answers
    has_accuracy: bool = True

    @property
    def block_size(self) -> int:
        return self.prompt_len + self.answer_len - 1

    def encode_batch(self, prompts: np.ndarray, answers: np.ndarray
                     ) -> Tuple[np.ndarray, np.ndarray]:
        full = np.concatenate([prompts, answers], axis=1)           # (B, P + A)
        inputs, targets = full[:, :-1].copy(), full[:, 1:].copy()   # (B, S), S = P + A - 1
        targets[:, :self.prompt_len - 1] = IGNORE                   # score only the answer
        return inputs.astype(np.int64), targets.astype(np.int64)

    def sample(self, rng: np.random.Generator, batch: int,
               exclude: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
        prompts, answers = self.make_pairs(rng, batch)
        if exclude is not None:  # redraw any prompt that belongs to the held-out set
            for _ in range(100):
                clash = np.isin(self._keys(prompts), exclude)
                if not clash.any():
                    break
                new_p, new_a = self.make_pairs(rng, int(clash.sum()))
                prompts[clash], answers[clash] = new_p, new_a
        return self.encode_batch(prompts, answers)

    def heldout(self, count: int, seed: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A fixed evaluation set and the keys that training must never draw."""
        prompts, answers = self.make_pairs(np.random.default_rng(seed + 10_007), count)
        keys = self._keys(prompts)
        inputs, targets = self.encode_batch(prompts, answers)
        return inputs, targets, keys

    def _keys(self, prompts: np.ndarray) -> np.ndarray:
        return prompts.astype(np.int64) @ (len(self.vocab) ** np.arange(prompts.shape[1]))

    def decode(self, ids: np.ndarray) -> List[str]:
        return [self.vocab[i] for i in ids]


def _digit_task(name: str, length: int, answer: Callable[[np.ndarray], np.ndarray]
                ) -> SequenceTask:
    sep = len(DIGITS)

    def make_pairs(rng: np.random.Generator, batch: int) -> Tuple[np.ndarray, np.ndarray]:
        digits = rng.integers(0, 10, size=(batch, length))
        prompts = np.concatenate([digits, np.full((batch, 1), sep)], axis=1)
        return prompts, answer(digits)

    def solve(prompts: np.ndarray) -> np.ndarray:
        return answer(prompts[:, :length])

    return SequenceTask(name, DIGITS + ["|"], length + 1, length, make_pairs, solve)


def _addition_task(width: int = 3) -> SequenceTask:
    plus, equals = 10, 11

    def make_pairs(rng: np.random.Generator, batch: int) -> Tuple[np.ndarray, np.ndarray]:
        a = rng.integers(0, 10 ** width, size=batch)
        b = rng.integers(0, 10 ** width, size=batch)

        def digits(n: np.ndarray, w: int) -> np.ndarray:
            return (n[:, None] // 10 ** np.arange(w - 1, -1, -1)) % 10     # (B, w)

        prompts = np.concatenate([digits(a, width), np.full((batch, 1), plus), digits(b, width),
                                  np.full((batch, 1), equals)], axis=1)
        return prompts, digits(a + b, width + 1)

    def solve(prompts: np.ndarray) -> np.ndarray:
        place = 10 ** np.arange(width - 1, -1, -1)                          # (w,)
        a = prompts[:, :width] @ place
        b = prompts[:, width + 1:2 * width + 1] @ place
        total = a + b
        return (total[:, None] // 10 ** np.arange(width, -1, -1)) % 10      # (B, w + 1)

    return SequenceTask("addition", DIGITS + ["+", "="], 2 * width + 2, width + 1, make_pairs,
                        solve)


class CharTask:
    """Character-level language modelling on the pydoc topics text (about 1 MB)."""

    name = "chars"
    has_accuracy = False
    prompt_len = 1

    def __init__(self, block_size: int = 64, max_chars: int = 400_000):
        from pydoc_data.topics import topics  # noqa: PLC0415 - ships with Python
        text = "\n\n".join(topics[key] for key in sorted(topics))[:max_chars]
        self.vocab = sorted(set(text))
        index = {c: i for i, c in enumerate(self.vocab)}
        data = np.array([index[c] for c in text], dtype=np.int64)
        split = int(0.9 * len(data))
        self.train_data, self.val_data = data[:split], data[split:]
        self._block_size = block_size

    @property
    def block_size(self) -> int:
        return self._block_size

    def _windows(self, data: np.ndarray, starts: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        offsets = starts[:, None] + np.arange(self.block_size + 1)          # (B, S + 1)
        chunk = data[offsets]
        return chunk[:, :-1].copy(), chunk[:, 1:].copy()

    def sample(self, rng: np.random.Generator, batch: int,
               exclude: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
        starts = rng.integers(0, len(self.train_data) - self.block_size - 1, size=batch)
        return self._windows(self.train_data, starts)

    def heldout(self, count: int, seed: int) -> Tuple[np.ndarray, np.ndarray, None]:
        starts = np.random.default_rng(seed + 10_007).integers(
            0, len(self.val_data) - self.block_size - 1, size=count)
        inputs, targets = self._windows(self.val_data, starts)
        return inputs, targets, None

    def decode(self, ids: np.ndarray) -> List[str]:
        return [self.vocab[i] for i in ids]

    def encode(self, text: str) -> np.ndarray:
        index = {c: i for i, c in enumerate(self.vocab)}
        return np.array([index.get(c, 0) for c in text], dtype=np.int64)


TASKS: Dict[str, Callable[[], object]] = {
    "reverse": lambda: _digit_task("reverse", 8, lambda d: d[:, ::-1]),
    "copy": lambda: _digit_task("copy", 8, lambda d: d.copy()),
    "sort": lambda: _digit_task("sort", 8, lambda d: np.sort(d, axis=1)),
    "addition": _addition_task,
    "chars": CharTask,
}


def make_task(name: str):
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}: choose one of {', '.join(TASKS)}")
    return TASKS[name]()
