"""Findings of the programs42 probe (d2l's seq2seq/Transformer/optimisation/MLP chapters,
nn-zero-to-hero, pytorch/examples run unchanged under run-torch), each checked against torch.
"""
import numpy as np
import pytest

import tinyattn as ta
from tinyattn.torch_shim import patches

torch = pytest.importorskip("torch", reason="torch is the oracle for these tests")


@pytest.fixture
def torch_meanings():
    """``x.data`` as a Tensor, as while a script runs under run-torch."""
    patches.apply()
    try:
        yield
    finally:
        patches.restore()


# d2l's concise linear regression initialises a LazyLinear before its first forward:
# ``self.net.weight.data.normal_(0, 0.01); self.net.bias.data.fill_(0)``. In torch ``.data``
# of an uninitialized parameter is an empty tensor (the writes do nothing; the first forward
# initialises the layer); tinyattn raised "Can't access the shape ..." at the model's making.
@pytest.mark.parametrize("name", ["weight", "bias"])
def test_lazy_parameter_data_is_an_empty_tensor(torch_meanings, name):
    ours, theirs = getattr(ta.nn.LazyLinear(1), name), getattr(torch.nn.LazyLinear(1), name)
    a, b = ours.data, theirs.data
    assert tuple(a.shape) == tuple(b.shape) == (0,)
    assert str(a.dtype) == str(b.dtype)
    a.normal_(0, 0.01), b.normal_(0, 0.01)
    a.fill_(0), b.fill_(0)
    assert float(a.sum()) == float(b.sum()) == 0.0


def test_lazy_linear_after_data_init_is_initialised_by_its_forward(torch_meanings):
    layer = ta.nn.LazyLinear(2)
    layer.weight.data.normal_(0, 0.01)
    out = layer(ta.ones(4, 3))
    assert tuple(out.shape) == (4, 2) and tuple(layer.weight.shape) == (2, 3)
    assert float(layer.weight.detach().abs().max()) > 0.02      # not the 0.01 normal: a no-op
    with pytest.raises(RuntimeError):                            # negative control: still lazy
        ta.nn.LazyLinear(1).weight.shape


# d2l's lr-scheduler chapter calls a scheduler unless it is torch's own:
# ``if scheduler.__module__ == lr_scheduler.__name__: scheduler.step() else: scheduler(epoch)``.
# Under run-torch the module is named torch.optim.lr_scheduler but its classes said
# tinyattn.optim.lr_scheduler, so MultiStepLR was called ("object is not callable").
@pytest.mark.parametrize("module, name", [("torch.optim.lr_scheduler", "MultiStepLR"),
                                          ("torch.optim.lr_scheduler", "StepLR"),
                                          ("torch.optim", "SGD"), ("torch.nn", "Linear")])
def test_classes_report_their_torch_module_under_run_torch(module, name):
    import importlib
    from tinyattn.torch_shim.finder import TorchModule
    from tinyattn.torch_shim.names import MODULES
    real = getattr(importlib.import_module(module), name)
    patches.apply()
    try:
        shim = TorchModule(module, MODULES[module])
        cls = getattr(shim, name)
        assert cls.__module__ == module               # torch's: torch.optim.lr_scheduler ...
        assert real.__module__.startswith(cls.__module__)
    finally:
        patches.restore()
    assert cls.__module__.startswith("tinyattn.")    # its own name again once a script ends


# pytorch/examples' GCN multiplies with torch.spmm (sparse @ dense). tinyattn has no sparse
# tensors, but with the dense adjacency the program can build, torch.spmm is torch.mm: it was
# missing ("tinyattn does not implement torch.spmm"). torch.mm's refusals are RuntimeErrors
# (TypeError for a non-tensor); tinyattn raised ValueError.
def _pair_of(lib, seed):
    rng = np.random.default_rng(seed)
    a = lib.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = lib.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    return a, b


@pytest.mark.parametrize("name", ["spmm", "mm"])
def test_spmm_and_mm_of_dense_matrices_match_torch(name):
    (a, b), (ta_, tb) = _pair_of(ta, 0), _pair_of(torch, 0)
    ours, theirs = getattr(ta, name)(a, b), getattr(torch, name)(ta_, tb)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    ours.square().sum().backward()
    theirs.square().sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta_.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["spmm", "mm"])
@pytest.mark.parametrize("case", ["vector_first", "batch_second", "number_second"])
def test_spmm_and_mm_refuse_with_torchs_exception_types(name, case):
    def call(lib):
        make = {"vector_first": lambda: (lib.ones(3), lib.ones(3, 2)),
                "batch_second": lambda: (lib.ones(2, 3), lib.ones(2, 3, 2)),
                "number_second": lambda: (lib.ones(2, 3), 2)}[case]
        return getattr(lib, name)(*make())
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)):
        call(ta)


# pytorch/examples' reinforce.py and actor_critic.py (policy gradients) stopped at
# "from torch.distributions import Categorical" (not implemented). Categorical's values,
# gradients and refusals against torch's.
from tinyattn.distributions import Categorical  # noqa: E402

CATEGORICAL_PARAMS = {
    "probs": (np.array([[0.2, 0.3, 0.5], [0.0, 1.0, 0.0]]) * 2, [2, 1]),
    "logits": (np.array([[1.0, -2.0, 0.5], [0.0, 0.0, 3.0]]), [[0], [2]]),
    "probs_1d": (np.array([1.0, 3.0]), 1),
}


@pytest.mark.parametrize("case", sorted(CATEGORICAL_PARAMS))
def test_categorical_matches_torch(case):
    params, value = CATEGORICAL_PARAMS[case]
    kind = "logits" if case == "logits" else "probs"
    ours_p = ta.tensor(params, requires_grad=True)
    theirs_p = torch.tensor(params, requires_grad=True)
    ours = Categorical(**{kind: ours_p})
    theirs = torch.distributions.Categorical(**{kind: theirs_p})
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    for name in ("probs", "logits"):
        np.testing.assert_allclose(getattr(ours, name).detach().numpy(),
                                   getattr(theirs, name).detach().numpy(), rtol=1e-12)
    a = ours.log_prob(ta.tensor(value)), ours.entropy()
    b = theirs.log_prob(torch.tensor(value)), theirs.entropy()
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=1e-12)
    (a[0].sum() + a[1].sum()).backward()
    (b[0].sum() + b[1].sum()).backward()
    np.testing.assert_allclose(ours_p.grad.numpy(), theirs_p.grad.numpy(), rtol=1e-10,
                               atol=1e-12)
    assert ours.mode.tolist() == theirs.mode.tolist()
    for shape in [(), (4,), (2, 3)]:
        assert tuple(ours.sample(shape).shape) == tuple(theirs.sample(shape).shape)


def test_categorical_samples_follow_the_probabilities():
    ta.manual_seed(0)
    draws = Categorical(ta.tensor([0.1, 0.0, 0.6, 0.3])).sample((20000,)).numpy()
    counts = np.bincount(draws, minlength=4) / 20000
    assert counts[1] == 0.0                                   # never a zero-probability class
    np.testing.assert_allclose(counts, [0.1, 0.0, 0.6, 0.3], atol=0.02)


@pytest.mark.parametrize("case", ["negative_prob", "both", "neither", "value_too_big",
                                  "value_fraction", "scalar_probs"])
def test_categorical_refuses_as_torch(case):
    def call(lib, cat):
        t = lib.tensor
        return {"negative_prob": lambda: cat(t([0.5, -0.1])),
                "both": lambda: cat(probs=t([0.5, 0.5]), logits=t([0.0, 0.0])),
                "neither": lambda: cat(),
                "value_too_big": lambda: cat(t([0.5, 0.5])).log_prob(t(2)),
                "value_fraction": lambda: cat(t([0.5, 0.5])).log_prob(t(0.5)),
                "scalar_probs": lambda: cat(t(0.5))}[case]()
    with pytest.raises(Exception) as theirs:
        call(torch, torch.distributions.Categorical)
    with pytest.raises(type(theirs.value)):
        call(ta, Categorical)


# A learner's PSNR line, torch.log10(1 / mse.item()), hands a Python float to an op that takes
# a tensor: torch raises TypeError ("must be Tensor, not float"); tinyattn stopped with an
# AttributeError from deep inside the op.
@pytest.mark.parametrize("name", ["log10", "exp", "sqrt", "sin", "floor", "square", "lgamma",
                                  "logit", "sigmoid", "sum", "softmax", "clone", "abs"])
def test_an_op_given_a_python_number_raises_torchs_type_error(name):
    args = (2.0, 0) if name == "softmax" else (2.0,)
    with pytest.raises(TypeError):
        getattr(torch, name)(*args)
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        getattr(ta, name)(*args)
    assert getattr(ta, name)(ta.tensor([2.0]), *args[1:]).numel() == 1   # negative control


def test_a_torch_module_read_outside_a_run_renames_nothing():
    """Reading torch.Tensor through the shim's module when no script runs (a test, a tool)
    must leave tinyattn's classes their own __module__: renamed to "torch", a Tensor could not
    be pickled any more (pickle looks it up in real torch), so DataLoader workers' batches were
    dropped by the queue's feeder thread and the loop waited forever."""
    import pickle
    from tinyattn.torch_shim.finder import TorchModule
    from tinyattn.torch_shim.names import MODULES
    assert TorchModule("torch", MODULES["torch"]).Tensor is ta.Tensor
    assert TorchModule("torch.nn", MODULES["torch.nn"]).Linear.__module__.startswith("tinyattn")
    assert ta.Tensor.__module__.startswith("tinyattn")
    assert pickle.loads(pickle.dumps(ta.ones(2))).tolist() == [1.0, 1.0]
