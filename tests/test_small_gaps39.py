"""Small differences from torch closed in session 39 (issue 30), each against torch: empty
tensors' strides, the exception type for shapes that do not broadcast, half-precision
tensors with a Python float, cross_entropy in half precision, grad_fn names."""
import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="torch is the oracle")


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 4), (0, 1), (1, 0), (0, 0, 2),
                                   (1,), (3, 1), (1, 3), (2, 1, 3), ()])
def test_new_tensors_have_torchs_strides_empty_ones_too(shape):
    for make in ("zeros", "ones", "empty"):
        ours, theirs = getattr(ta, make)(shape), getattr(torch, make)(shape)
        assert ours.stride() == theirs.stride()
        assert ours.is_contiguous() == theirs.is_contiguous()
        for d in range(len(shape)):
            assert ours.stride(d) == theirs.stride(d)


def test_empty_views_keep_their_own_strides():
    ours, theirs = ta.zeros(4, 3), torch.zeros(4, 3)
    for view in (lambda t: t[:0], lambda t: t[:, :0], lambda t: t.T[:0]):
        assert view(ours).stride() == view(theirs).stride()
    assert ta.tensor([]).stride() == torch.tensor([]).stride() == (1,)
    assert ta.zeros(0, 3).stride() != (0, 0)            # NumPy's own answer (the bug)
