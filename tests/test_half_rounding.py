"""float16/bfloat16 results bit for bit against torch's CPU kernels (issue 30's "to fix" rows).

torch computes most half-precision ops in float32 and rounds once, but some kernels round
on the way (log_softmax along the last dim keeps its sum in the half dtype, nll_loss sums in
it, batch norm keeps its statistics in it, addr and mse_loss round each product). Each test
draws random inputs, compares tinyattn's result with torch's exactly (every bit), and has a
negative control: the plain "float32, round once" result differs from torch's on the same
inputs, so the test can fail. The dtype checks (einsum, hardtanh, special.round) sit at the
end.
"""
from __future__ import annotations

from typing import Any, Callable, List

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="these tests compare with PyTorch")
TF = torch.nn.functional

HALF = ["float16", "bfloat16"]


def _pair(x: np.ndarray, dtype: str) -> Any:
    """The same half-precision values in torch and tinyattn."""
    t = torch.tensor(x, dtype=torch.float32).to(getattr(torch, dtype))
    return t, ta.tensor(t.float().numpy()).to(getattr(ta, dtype))


def _bits_equal(ours: Any, theirs: Any) -> bool:
    a = np.asarray(ours.float().numpy(), dtype=np.float32)
    b = theirs.float().numpy().astype(np.float32)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def _check(trials: int, make: Callable[[np.random.Generator, str], List[Any]], dtype: str,
           allowed_misses: int = 0) -> int:
    """Run ``trials`` cases; each returns (ours, theirs, plain float32-once result).
    Asserts the cases agree bit for bit (all but ``allowed_misses``), returns how many cases
    the plain result missed."""
    rng = np.random.default_rng(30)
    control_misses = misses = 0
    for trial in range(trials):
        ours, theirs, plain = make(rng, dtype)
        if not _bits_equal(ours, theirs):
            misses += 1
            assert misses <= allowed_misses, f"trial {trial}: {ours} != {theirs}"
        control_misses += not _bits_equal(plain, theirs)
    return control_misses


def _round_once(value: np.ndarray, dtype: str) -> Any:
    return ta.tensor(np.asarray(value, dtype=np.float32)).to(getattr(ta, dtype))


@pytest.mark.parametrize("dtype", HALF)
def test_log_softmax_along_the_last_dim(dtype: str) -> None:
    def make(rng: np.random.Generator, dtype: str) -> List[Any]:
        x = rng.standard_normal((3, int(rng.integers(5, 40)))) * 3
        t, o = _pair(x, dtype)
        xs = t.float().numpy()
        shifted = xs - xs.max(1, keepdims=True)
        plain = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        return [ta.log_softmax(o, -1), torch.log_softmax(t, -1), _round_once(plain, dtype)]
    assert _check(40, make, dtype) > 5


@pytest.mark.parametrize("dtype", HALF)
def test_nll_loss_sums_in_the_half_dtype(dtype: str) -> None:
    def make(rng: np.random.Generator, dtype: str) -> List[Any]:
        shape = [(40, 5), (2, 3, 7, 9), (300, 3)][int(rng.integers(3))]
        x = rng.standard_normal(shape) * 2
        target = rng.integers(0, shape[1], (shape[0],) + shape[2:])
        t, o = _pair(x, dtype)
        picked = np.take_along_axis(t.float().numpy(), np.expand_dims(target, 1), 1)
        return [ta.nn.functional.nll_loss(o, ta.tensor(target), reduction="sum"),
                TF.nll_loss(t, torch.tensor(target), reduction="sum"),
                _round_once(-picked.sum(), dtype)]
    assert _check(20, make, dtype) > 3


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_as_torch_kernel(dtype: str, training: bool) -> None:
    def make(rng: np.random.Generator, dtype: str) -> List[Any]:
        shape = [(5, 5, 5), (3, 2, 3, 4), (8, 3)][int(rng.integers(3))]
        channels = shape[1]
        t, o = _pair(rng.standard_normal(shape) * rng.uniform(0.5, 5), dtype)
        params = [_pair(v, dtype) for v in (rng.standard_normal(channels),
                                           rng.uniform(0.1, 2, channels),
                                           rng.standard_normal(channels),
                                           rng.standard_normal(channels))]
        (tm, om), (tv, ov), (tw, ow), (tb, ob) = params
        theirs = TF.batch_norm(t, tm, tv, tw, tb, training=training, eps=0.5)
        ours = ta.nn.functional.batch_norm(o, om, ov, ow, ob, training=training, eps=0.5)
        xs, axes = t.float().numpy(), (0,) + tuple(range(2, len(shape)))
        view = (1, channels) + (1,) * (len(shape) - 2)
        mean = xs.mean(axes, keepdims=True) if training else tm.float().numpy().reshape(view)
        var = xs.var(axes, keepdims=True) if training else tv.float().numpy().reshape(view)
        plain = (xs - mean) / np.sqrt(var + 0.5) * tw.float().numpy().reshape(view) \
            + tb.float().numpy().reshape(view)
        if training:                        # float16's running mean is updated in float32
            assert dtype == "bfloat16" or _bits_equal(om, tm)
        return [ours, theirs, _round_once(plain, dtype)]
    # evaluation: torch's x alpha + beta matches the plain formula more often (a weak control),
    # and one draw in 30 still differs by a unit in the last place (whether the compiler
    # fuses torch's scalar tail is not reproduced): a known residual, in the report
    misses = _check(30, make, dtype, allowed_misses=0 if training else 1)
    assert misses > 3 or not training       # the training control: the plain result misses


@pytest.mark.parametrize("dtype", HALF)
def test_addr_rounds_each_product(dtype: str) -> None:
    def make(rng: np.random.Generator, dtype: str) -> List[Any]:
        n, m = 5, 7
        (ti, oi), (t1, o1), (t2, o2) = (_pair(rng.standard_normal(s) * 2, dtype)
                                        for s in ((n, m), (n,), (m,)))
        plain = 0.2 * ti.float().numpy() + 0.6 * np.outer(t1.float().numpy(),
                                                          t2.float().numpy())
        return [ta.addr(oi, o1, o2, beta=0.2, alpha=0.6),
                torch.addr(ti, t1, t2, beta=0.2, alpha=0.6), _round_once(plain, dtype)]
    assert _check(30, make, dtype) > 5


@pytest.mark.parametrize("dtype", HALF)
def test_lerp_mse_and_bce_with_logits(dtype: str) -> None:
    def make(rng: np.random.Generator, dtype: str) -> List[Any]:
        (ta_, oa), (tb, ob) = (_pair(rng.standard_normal((6, 7)) * 3, dtype) for _ in range(2))
        ty, oy = _pair(rng.uniform(0, 1, (6, 7)), dtype)
        weight = float(rng.uniform(-1, 2))
        a, b, y = ta_.float().numpy(), tb.float().numpy(), ty.float().numpy()
        ours = [ta.lerp(oa, ob, weight),
                ta.nn.functional.mse_loss(oa, ob, reduction="none"),
                ta.nn.functional.binary_cross_entropy_with_logits(oa, oy, reduction="none")]
        theirs = [torch.lerp(ta_, tb, weight), TF.mse_loss(ta_, tb, reduction="none"),
                  TF.binary_cross_entropy_with_logits(ta_, ty, reduction="none")]
        plain = [a + np.float32(weight) * (b - a), (a - b) ** 2,
                 (1 - y) * a + np.logaddexp(0, -a)]
        return [ta.cat([t.reshape(-1) for t in ours]), torch.cat([t.reshape(-1) for t in theirs]),
                _round_once(np.concatenate([p.reshape(-1) for p in plain]), dtype)]
    assert _check(20, make, dtype) > 3


def test_ldexp_half_rounds_the_power_first() -> None:
    rng = np.random.default_rng(0)
    for dtype in HALF:
        (tx, ox), (ty, oy) = (_pair(rng.standard_normal(400) * s, dtype) for s in (1, 3))
        assert _bits_equal(ta.ldexp(ox, oy), torch.ldexp(tx, ty))


# ------------------------------------------------------------------ dtypes
@pytest.mark.parametrize("equation,shapes", [
    ("ij->i", [(2, 3)]), ("ii", [(3, 3)]), ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]),
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,k->i", [(2, 3), (3,)]), ("ij,j->i", [(2, 1), (3,)]),
    ("ijk,j->i", [(2, 3, 1), (3,)]), ("i,j->j", [(1,), (3,)]), ("...ik,...j->ij",
                                                               [(1, 2, 3), (3,)]),
])
def test_einsum_integer_dtype_follows_torch(equation: str, shapes: List[Any]) -> None:
    operands = [np.arange(int(np.prod(s)), dtype=np.int32).reshape(s) for s in shapes]
    theirs = torch.einsum(equation, *[torch.tensor(a) for a in operands])
    ours = ta.einsum(equation, *[ta.tensor(a) for a in operands])
    assert str(theirs.dtype) == f"torch.{ours.dtype}"
    assert np.array_equal(ours.numpy(), theirs.numpy())


def test_hardtanh_keeps_integers_with_truncated_bounds() -> None:
    x = np.array([-3, 0, 2, 5], dtype=np.int32)
    ours = ta.nn.functional.hardtanh(ta.tensor(x), -2.7, 3.9)
    theirs = TF.hardtanh(torch.tensor(x), -2.7, 3.9)
    assert ours.dtype == np.int32 and np.array_equal(ours.numpy(), theirs.numpy())
    for bad in (lambda lib: lib.nn.functional.hardtanh(lib.tensor([True, False])),
                lambda lib: lib.nn.functional.hardtanh(lib.tensor([1, 2], dtype=lib.uint8))):
        with pytest.raises(RuntimeError):
            bad(torch)
        with pytest.raises(RuntimeError):
            bad(ta)


def test_special_round_refuses_integers_where_round_accepts_them() -> None:
    assert np.array_equal(ta.round(ta.tensor([1, 2])).numpy(), [1, 2])
    with pytest.raises(NotImplementedError):
        torch.special.round(torch.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="special.round"):
        ta.special.round(ta.tensor([1, 2]))
    assert float(ta.special.round(ta.tensor([2.5])).item()) == 2.0
