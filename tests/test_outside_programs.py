"""What outside learner programs (LLMs-from-scratch, d2l, PyTorch's examples, nanoGPT) call,
found by running them under ``python -m tinyattn run-torch`` next to real torch.

Each test reproduces one observed failure or difference, with torch as the oracle; the
programs themselves stay outside the repository.
"""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta


def _torch():
    return pytest.importorskip("torch", reason="torch is the reference for these behaviours")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64",
                                   "int32", "int8", "uint8", "bool"])
def test_element_size_itemsize_nbytes_follow_torch(dtype):
    # LLMs-from-scratch's memory estimate: torch.tensor(0, dtype=d).element_size()
    torch = _torch()
    ours = ta.zeros(2, 3, dtype=getattr(ta, dtype))[:, 1:]          # a view: 4 elements
    theirs = torch.zeros(2, 3, dtype=getattr(torch, dtype))[:, 1:]
    assert ours.element_size() == theirs.element_size()
    assert ours.itemsize == theirs.itemsize
    assert ours.nbytes == theirs.nbytes == 4 * theirs.element_size()
    assert ta.tensor(0, dtype=getattr(ta, dtype)).element_size() != 0


def test_element_size_negative_control():
    assert ta.zeros(3, dtype=ta.bfloat16).element_size() == 2
    assert ta.zeros(3, dtype=ta.float64).element_size() == 8
