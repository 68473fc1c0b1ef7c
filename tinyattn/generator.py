"""``tinyattn.Generator``: PyTorch's ``torch.Generator``, a random stream of its own.

    g = tinyattn.Generator().manual_seed(42)
    tinyattn.randperm(10, generator=g); DataLoader(ds, shuffle=True, generator=g)

It IS a ``numpy.random.Generator`` (PCG64), so every tinyattn function that takes
``generator=`` (rand, randn, randint, randperm, multinomial, normal, DataLoader,
random_split, RandomSampler) takes it, and its draws never touch the global stream that
``manual_seed`` seeds: a seeded generator gives the same numbers whatever the global seed.
The numbers are NumPy's, not torch's bits (docs/pytorch.md says why).
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from . import backend

__all__ = ["Generator", "DEFAULT_SEED", "manual_seed"]

DEFAULT_SEED = 67280421310721      # torch.Generator().initial_seed() before manual_seed


class Generator(np.random.Generator):
    """``Generator(device="cpu")``: seeded with torch's default seed until ``manual_seed``."""

    def __init__(self, device: Any = "cpu"):
        super().__init__(np.random.PCG64(DEFAULT_SEED))
        self.device = str(device)
        self._initial_seed = DEFAULT_SEED

    def manual_seed(self, seed: int) -> "Generator":
        """Restart the stream from ``seed``; returns the generator (``g = G().manual_seed(0)``
        works, as in torch)."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"manual_seed expected an int, got {type(seed).__name__}")
        seed = int(seed) % (1 << 64)          # torch accepts negative seeds the same way
        self.bit_generator.state = np.random.PCG64(seed).state
        self._initial_seed = seed
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy; returns the new seed."""
        return self.manual_seed(int(np.random.SeedSequence().entropy % (1 << 63))) \
            .initial_seed()

    def initial_seed(self) -> int:
        return self._initial_seed

    def get_state(self) -> Any:
        """The stream's state as a uint8 tensor (what torch returns), for ``set_state``."""
        from .tensor import Tensor  # noqa: PLC0415 - the tensor layer sits beside this one
        text = json.dumps(self.bit_generator.state).encode()
        return Tensor._wrap(np.frombuffer(text, dtype=np.uint8).copy())

    def set_state(self, state: Any) -> "Generator":
        array = np.asarray(state.numpy() if hasattr(state, "numpy") else state, dtype=np.uint8)
        try:
            self.bit_generator.state = json.loads(array.tobytes().decode())
        except (ValueError, TypeError, KeyError) as exc:
            raise RuntimeError(f"Generator.set_state: not a state from get_state() "
                               f"({type(exc).__name__}: {exc})") from None
        return self

    def __repr__(self) -> str:
        return f"<tinyattn.Generator seeded {self._initial_seed} on {self.device}>"

    __str__ = __repr__


def manual_seed(seed: int) -> Generator:
    """``torch.manual_seed(seed)``: seed every device's default generator, and return the
    CPU one as a ``Generator`` (torch returns its default generator: ``g =
    torch.manual_seed(0)``, then ``g.initial_seed()``, ``g.get_state()``, ``generator=g``)."""
    backend.manual_seed(seed)
    _DEFAULT_CPU.manual_seed(int(seed))       # the same stream backend would make: one object,
    backend.set_default_generator("cpu", _DEFAULT_CPU)     # reseeded each time, as torch's
    return _DEFAULT_CPU


_DEFAULT_CPU = Generator("cpu")
