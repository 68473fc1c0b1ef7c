"""RandomSampler draws lazily, as torch's: ``RandomSampler(ds, replacement=True,
num_samples=10**10)`` (minGPT's trainer) costs no memory (it allocated 74.5 GiB at the first
batch), and its draws are the ones a single large draw would give."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

from tinyattn.utils.data import DataLoader, RandomSampler, TensorDataset
import tinyattn as ta


def test_huge_num_samples_with_replacement_stays_small():
    script = textwrap.dedent("""
        import itertools, resource
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        import numpy as np
        from tinyattn.utils.data import RandomSampler
        s = RandomSampler(range(7), replacement=True, num_samples=10**10,
                          generator=np.random.default_rng(0))
        first = list(itertools.islice(iter(s), 100))
        assert len(s) == 10**10 and len(first) == 100 and set(first) <= set(range(7))
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_draws_equal_one_large_draw():
    lazy = list(RandomSampler(range(5), replacement=True, num_samples=100,
                              generator=np.random.default_rng(3)))
    assert lazy == np.random.default_rng(3).integers(0, 5, size=100).tolist()
    passes = list(RandomSampler(range(4), num_samples=10, generator=np.random.default_rng(4)))
    rng = np.random.default_rng(4)
    expected = np.concatenate([rng.permutation(4) for _ in range(3)])[:10].tolist()
    assert passes == expected
    assert sorted(passes[:4]) == [0, 1, 2, 3] and sorted(passes[4:8]) == [0, 1, 2, 3]


def test_draws_are_lazy():
    rng = np.random.default_rng(5)
    it = iter(RandomSampler(range(3), replacement=True, num_samples=10**12, generator=rng))
    state = rng.bit_generator.state
    next(it)
    assert rng.bit_generator.state != state                   # drawn at the first next()
    for _ in range(31):
        next(it)
    state = rng.bit_generator.state
    next(it)                                                   # the 33rd: a new chunk of 32
    assert rng.bit_generator.state != state


def test_loader_with_huge_sampler_gives_a_batch():
    ds = TensorDataset(ta.arange(6.0))
    loader = DataLoader(ds, batch_size=4,
                        sampler=RandomSampler(ds, replacement=True, num_samples=10**10))
    (batch,) = next(iter(loader))
    assert batch.shape == (4,) and len(loader) == 10**10 // 4
