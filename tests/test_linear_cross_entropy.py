"""F.linear_cross_entropy and nn.LinearCrossEntropyLoss against torch: values and float64
gradients of input, weight and bias for class ids, K-dimensional weights, probability
targets, class weights, ignore_index, label smoothing and every reduction; options accepted
(same values); torch's errors; the module's state dict and printout. A negative control shows
the comparison can fail."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-12)


def _run(lib, functional, x, w, target, bias=None, **kwargs):
    tensors = [lib.tensor(a, requires_grad=True) for a in (x, w)]
    b = None if bias is None else lib.tensor(bias, requires_grad=True)
    t = lib.tensor(target)
    options = kwargs.pop("options", None)
    if options is not None:
        options = (torch.nn if lib is torch else nn).LinearCrossEntropyOptions(**options)
    weight = kwargs.pop("weight", None)
    out = functional.linear_cross_entropy(*tensors, t, linear_bias=b, options=options,
                                          weight=None if weight is None else lib.tensor(weight),
                                          **kwargs)
    out.sum().backward()
    grads = [a.grad.numpy() for a in tensors] + ([] if b is None else [b.grad.numpy()])
    return out.detach().numpy(), grads


def _compare(*args, **kwargs):
    want, want_grads = _run(torch, TF, *args, **dict(kwargs))
    got, got_grads = _run(ta, F, *args, **dict(kwargs))
    np.testing.assert_allclose(got, want, **TOL)
    for a, b in zip(got_grads, want_grads):
        np.testing.assert_allclose(a, b, **TOL)


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("kwargs", [
    dict(), dict(reduction="sum"), dict(reduction="none"), dict(ignore_index=2),
    dict(label_smoothing=0.2), dict(weight=RNG.random(5) + 0.1),
    dict(weight=RNG.random(5) + 0.1, ignore_index=1, reduction="sum"),
    dict(options=dict(batch_chunk_size=2)), dict(options={}, reduction="none")], ids=str)
def test_class_ids_match_torch(kwargs):
    target = RNG.integers(0, 5, 6)
    _compare(RNG.standard_normal((6, 4)), RNG.standard_normal((5, 4)), target,
             RNG.standard_normal(5), **kwargs)


def test_unbatched_kdim_and_probability_targets_match_torch():
    _compare(RNG.standard_normal(4), RNG.standard_normal((5, 4)), np.array(3))
    _compare(RNG.standard_normal((3, 4)), RNG.standard_normal((5, 2, 4)),
             RNG.integers(0, 5, (3, 2)), RNG.standard_normal((5, 2)))
    probabilities = RNG.dirichlet(np.ones(5), size=3)                       # (3, 5)
    _compare(RNG.standard_normal((3, 4)), RNG.standard_normal((5, 4)), probabilities,
             label_smoothing=0.1)


def test_negative_control_bias_left_out_is_caught():
    x, w, b, t = (RNG.standard_normal((6, 4)), RNG.standard_normal((5, 4)),
                  RNG.standard_normal(5), RNG.integers(0, 5, 6))
    want, _ = _run(torch, TF, x, w, t, b)
    got, _ = _run(ta, F, x, w, t)
    assert not np.allclose(got, want, **TOL)


@pytest.mark.parametrize("shapes,kwargs,match", [
    (((2, 3, 4), (5, 4), (2,)), {}, "dimensionality 1 or 2"),
    (((2, 4), (4,), (2,)), {}, "at least 2"),
    (((2, 3), (5, 4), (2,)), {}, "in_features"),
    (((4,), (5, 2, 4), ()), {}, "requires batched input"),
    (((2, 4), (5, 4), (2, 5)), dict(ignore_index=1), "ignore_index cannot be specified"),
], ids=["input_dims", "weight_dims", "in_features", "kdim_unbatched", "ignore_probs"])
def test_errors_as_torch(shapes, kwargs, match):
    x, w, t = shapes
    target = np.zeros(t) if len(t) == 2 else np.zeros(t, dtype=np.int64)
    for lib, functional in ((torch, TF), (ta, F)):
        with pytest.raises(RuntimeError, match=match):
            functional.linear_cross_entropy(lib.zeros(x), lib.zeros(w), lib.tensor(target),
                                            **kwargs)
    for lib, functional in ((torch, TF), (ta, F)):
        with pytest.raises(RuntimeError, match="linear_bias shape"):
            functional.linear_cross_entropy(lib.zeros(2, 4), lib.zeros(5, 4),
                                            lib.tensor(np.zeros(2, dtype=np.int64)),
                                            linear_bias=lib.zeros(4))


def test_module_state_dict_printout_and_values_as_torch():
    kwargs = dict(out_features=(2,), bias=True, reduction="sum", label_smoothing=0.1)
    theirs = torch.nn.LinearCrossEntropyLoss(4, 3, dtype=torch.float64, **kwargs)
    ours = nn.LinearCrossEntropyLoss(4, 3, dtype=ta.float64, **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["linear.weight",
                                                                      "linear.bias"]
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({k: ta.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x, t = RNG.standard_normal((5, 4)), RNG.integers(0, 3, (5, 2))
    np.testing.assert_allclose(ours(ta.tensor(x), ta.tensor(t)).item(),
                               theirs(torch.tensor(x), torch.tensor(t)).item(), **TOL)
    with pytest.raises(RuntimeError, match="weight shape"):
        nn.LinearCrossEntropyLoss(4, 3, weight=ta.ones(2))
    with pytest.raises(RuntimeError, match="label_smoothing"):
        nn.LinearCrossEntropyLoss(4, 3, label_smoothing=1.5)
