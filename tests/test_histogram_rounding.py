"""torch.histogram's edges (its own linspace in the input dtype), its range for an empty input
([0, 1]) and its float32 weighted counts (added in element order in float32) against torch."""
import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")


def _same(x, bins, **kw):
    expected = torch.histogram(x, bins, **kw)
    kw = {k: (ta.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
    got = ta.histogram(ta.tensor(x.numpy()), bins, **kw)
    np.testing.assert_array_equal(got.bin_edges.numpy(), expected.bin_edges.numpy())
    np.testing.assert_array_equal(got.hist.numpy(), expected.hist.numpy())


def test_empty_input_range_is_zero_to_one():
    for dtype in (torch.float32, torch.float64):
        _same(torch.empty(5, 0, 5, dtype=dtype), 2)
        _same(torch.empty(0, dtype=dtype), 1, weight=torch.empty(0, dtype=dtype), density=True)


def test_float32_weighted_counts_bit_for_bit():
    gen = torch.Generator().manual_seed(0)
    for n in (1, 7, 60, 125, 200):          # below torch's parallel grain: one serial pass
        for bins in (1, 4, 13):
            x = torch.randn(n, generator=gen) * 9
            w = torch.rand(n, generator=gen) * 9
            _same(x, bins, weight=w)
            expected = torch.histogram(x, bins, weight=w, density=True)   # torch's float32
            got = ta.histogram(ta.tensor(x.numpy()), bins, weight=ta.tensor(w.numpy()),
                               density=True)                 # sum of the bins: its own order
            np.testing.assert_allclose(got.hist.numpy(), expected.hist.numpy(), rtol=1e-6)


def test_float64_sum_rounded_once_is_not_torchs():
    """negative control: rounding a float64 weighted count once differs from torch's float32
    accumulation for some inputs, so the test above is not vacuous."""
    gen = torch.Generator().manual_seed(0)
    differs = 0
    for _ in range(20):
        x, w = torch.randn(200, generator=gen), torch.rand(200, generator=gen)
        expected = torch.histogram(x, 4, weight=w)
        edges = expected.bin_edges.double().numpy()
        once = np.histogram(x.double().numpy(), edges, weights=w.double().numpy())[0]
        differs += not np.array_equal(once.astype(np.float32), expected.hist.numpy())
    assert differs > 0
