"""Ops whose float results follow torch's order of rounding, where a cancelling sum makes the
order visible beyond assert_close's tolerance (op_db's all-samples run, accuracy43)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="these tests compare with torch")

import tinyattn  # noqa: E402


def _tiny(t):
    return tinyattn.tensor(t.detach().numpy())


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.numpy()


# --- matmul: torch's CPU bmm adds small products (K*M*N < 400) in k order -----------------
@pytest.mark.parametrize("sa,sb", [((10,), (5, 5, 10, 5)), ((3, 10), (4, 10, 5)),
                                   ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                                   ((20,), (3, 20, 19))])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_small_batched_matmul_is_torch_bitwise(sa, sb, dtype):
    gen = torch.Generator().manual_seed(0)
    a = (torch.randn(sa, generator=gen) * 5).to(dtype)
    b = (torch.randn(sb, generator=gen) * 5).to(dtype)
    expected = torch.matmul(a, b)
    np.testing.assert_array_equal(_np(_tiny(a) @ _tiny(b)), _np(expected))


def test_op_db_matmul_sample_that_cancels():
    """op_db's (10,) @ (5, 5, 10, 5) float32 sample: BLAS's order of the same ten products
    differed from torch's by 1.5e-5 (over float32's 1e-5 + 1.3e-6 |x|)."""
    gen = torch.Generator().manual_seed(0)
    worst = 0.0
    for _ in range(20):
        a = torch.empty(10).uniform_(-9, 9, generator=gen)
        b = torch.empty(5, 5, 10, 5).uniform_(-9, 9, generator=gen)
        worst = max(worst, float(np.abs(_np(_tiny(a) @ _tiny(b)) - _np(a @ b)).max()))
        # the rmatmul spelling and the out= form go the same way
        np.testing.assert_array_equal(_np(_tiny(b).__rmatmul__(_tiny(a))), _np(a @ b))
    assert worst == 0.0


def test_small_batched_matmul_negative_control():
    """The k-order loop is what makes them agree: NumPy's BLAS order differs on these."""
    gen = torch.Generator().manual_seed(0)
    differs = 0
    for _ in range(20):
        a = torch.empty(10).uniform_(-9, 9, generator=gen)
        b = torch.empty(5, 5, 10, 5).uniform_(-9, 9, generator=gen)
        differs += int((a.numpy() @ b.numpy() != (a @ b).numpy()).any())
    assert differs > 0


# --- index_reduce "prod" in float16/bfloat16: each product rounded to the half dtype ------
_HALF = {torch.float16: "float16", torch.bfloat16: "bfloat16"}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_half_index_reduce_prod_is_torch_bitwise(dtype, include_self, dim):
    gen = torch.Generator().manual_seed(dim)
    for _ in range(10):
        x = torch.empty(5, 5, 5).uniform_(-3, 3, generator=gen).to(dtype)
        shape = [5, 5, 5]
        shape[dim] = 10
        src = torch.empty(shape).uniform_(-3, 3, generator=gen).to(dtype)
        idx = torch.randint(0, 5, (10,), generator=gen)
        expected = x.index_reduce(dim, idx, src, "prod", include_self=include_self)
        half = _HALF[dtype]
        got = tinyattn.tensor(x.float().numpy()).to(half).index_reduce(
            dim, tinyattn.tensor(idx.numpy()), tinyattn.tensor(src.float().numpy()).to(half),
            "prod", include_self=include_self)
        np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())


def test_half_index_reduce_prod_negative_control():
    """A float32 product rounded once (what it did before) differs from torch's on these."""
    gen = torch.Generator().manual_seed(1)
    differs = 0
    for _ in range(10):
        x = torch.empty(5, 5, 5).uniform_(-3, 3, generator=gen).half()
        src = torch.empty(5, 10, 5).uniform_(-3, 3, generator=gen).half()
        idx = torch.randint(0, 5, (10,), generator=gen)
        once = x.float().index_reduce(1, idx, src.float(), "prod").half()
        differs += int((once != x.index_reduce(1, idx, src, "prod")).any())
    assert differs > 0
