"""F.embedding_bag and nn.EmbeddingBag against torch (issue 30, stream interp39): modes sum,
mean and max, 1-D ids with offsets (include_last_offset both) and 2-D ids, padding_idx,
per_sample_weights, scale_grad_by_freq, empty bags; values and gradients; module printout
and errors. A negative control shows the comparison can fail."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")
TF = torch.nn.functional


def _both(ids, weight, offsets, per_sample, up, **kwargs):
    wt, wo = torch.tensor(weight, requires_grad=True), ta.tensor(weight, requires_grad=True)
    pt = None if per_sample is None else torch.tensor(per_sample, requires_grad=True)
    po = None if per_sample is None else ta.tensor(per_sample, requires_grad=True)
    want = TF.embedding_bag(torch.tensor(ids), wt, None if offsets is None
                            else torch.tensor(offsets), per_sample_weights=pt, **kwargs)
    got = F.embedding_bag(ta.tensor(ids), wo, None if offsets is None else ta.tensor(offsets),
                          per_sample_weights=po, **kwargs)
    want.backward(torch.tensor(up[:want.shape[0]]))
    got.backward(ta.tensor(up[:want.shape[0]]))
    pairs = [(got.numpy(), want.detach().numpy()), (wo.grad.numpy(), wt.grad.numpy())]
    if per_sample is not None:
        pairs.append((po.grad.numpy(), pt.grad.numpy()))
    return pairs


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_bag_agrees_with_torch(mode, padding_idx):
    rng = np.random.default_rng(0)
    for trial in range(6):
        weight = rng.standard_normal((7, 3))
        last = trial % 2 == 1
        per_sample = mode == "sum" and trial % 3 == 0
        freq = mode != "max" and trial >= 3
        if trial == 4:                                   # 2-D ids: fixed-length bags
            ids, offsets = rng.integers(0, 7, (3, 4)), None
            last = False
        else:                                            # an empty bag in the middle
            ids = rng.integers(0, 7, 10)
            offsets = np.array([0, 3, 3, 7, 10] if last else [0, 3, 3, 7])
        weights = rng.standard_normal(ids.shape) if per_sample else None
        up = rng.standard_normal((4, 3))
        for got, want in _both(ids, weight, offsets, weights, up, mode=mode,
                               padding_idx=padding_idx, include_last_offset=last,
                               scale_grad_by_freq=freq):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_scale_grad_by_freq_follows_torch_rule():
    """torch's CPU kernel divides the k-th distinct id's gradient by the count of the k-th
    id in sorted order; for ids [1, 1, 1, 2] id 2's gradient is divided by 3 (id 1's count),
    and tinyattn does the same"""
    weight = np.zeros((4, 1))
    up = np.ones((4, 1))
    for got, want in _both(np.array([1, 1, 1, 2]), weight, np.array([0]), None, up,
                           mode="sum", scale_grad_by_freq=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_float32_and_module_as_torch():
    rng = np.random.default_rng(1)
    torch.manual_seed(0)
    for kwargs in [dict(), dict(mode="max", padding_idx=0), dict(mode="sum", max_norm=1.0,
                                                                  norm_type=3.0)]:
        theirs = torch.nn.EmbeddingBag(6, 4, **kwargs)
        ours = nn.EmbeddingBag(6, 4, **kwargs)
        assert repr(ours) == repr(theirs)
        weight = rng.standard_normal((6, 4)).astype(np.float32)
        ours_bag = nn.EmbeddingBag.from_pretrained(ta.tensor(weight.copy()), freeze=False,
                                                   **kwargs)
        theirs_bag = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(weight.copy()),
                                                           freeze=False, **kwargs)
        ids, offsets = rng.integers(0, 6, 9), np.array([0, 2, 5])
        np.testing.assert_allclose(
            ours_bag(ta.tensor(ids), ta.tensor(offsets)).detach().numpy(),
            theirs_bag(torch.tensor(ids), torch.tensor(offsets)).detach().numpy(),
            rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(ours_bag.weight.detach().numpy(),      # max_norm renorms
                                   theirs_bag.weight.detach().numpy(), rtol=1e-6)
    if "padding_idx" in kwargs:
        assert not ours.weight.detach().numpy()[0].any()


def test_negative_control_mode_matters():
    weight = np.random.default_rng(0).standard_normal((5, 2))
    ids, offsets = np.array([0, 1, 2, 3]), np.array([0, 2])
    want = TF.embedding_bag(torch.tensor(ids), torch.tensor(weight), torch.tensor(offsets),
                            mode="sum")
    got = F.embedding_bag(ta.tensor(ids), ta.tensor(weight), ta.tensor(offsets), mode="mean")
    assert not np.allclose(got.numpy(), want.numpy())


@pytest.mark.parametrize("kwargs,error,message", [
    (dict(offsets=np.array([1, 2])), RuntimeError, "offsets\\[0\\] has to be 0"),
    (dict(offsets=None), ValueError, "offsets has to be a 1D Tensor"),
    (dict(offsets=np.array([0, 7])), RuntimeError, "can not be greater than"),
    (dict(offsets=np.array([0, 2]), mode="foo"), ValueError, "mode has to be one of"),
    (dict(offsets=np.array([0, 2]), mode="max", scale_grad_by_freq=True), ValueError,
     "max mode does not support"),
    (dict(offsets=np.array([0, 2]), mode="mean", per_sample_weights=np.ones(5)),
     NotImplementedError, "only supported for mode='sum'"),
    (dict(offsets=np.array([0, 2]), mode="sum", per_sample_weights=np.ones(4)), ValueError,
     "must have the same shape"),
])
def test_errors_as_torch(kwargs, error, message):
    ids, weight = np.array([1, 2, 3, 4, 5]), np.zeros((6, 2))
    for module, make in ((F, ta.tensor), (TF, torch.tensor)):
        call = dict(kwargs)
        offsets = call.pop("offsets")
        if call.get("per_sample_weights") is not None:
            call["per_sample_weights"] = make(call["per_sample_weights"])
        with pytest.raises(error, match=message if module is F else None):
            module.embedding_bag(make(ids), make(weight),
                                 None if offsets is None else make(offsets), **call)
