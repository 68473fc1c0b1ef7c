"""The CPU-side guard for the GPU path: every op on the strict device (arrays that refuse NumPy
as CuPy's do, and count host syncs) must give the CPU's numbers without touching NumPy and
without syncing, except where an op must read values to validate them."""
import numpy as np
import pytest

import tinyattn as ta
from tinyattn import Function, backend, strict_device
from tinyattn.optable import OP_TABLE, make_inputs

strict_device.enable()
DEVICE = strict_device.DEVICE
ROWS = [(spec, case) for spec in OP_TABLE for case in spec.cases(np.random.default_rng(0))]
IDS = [f"{spec.name}[{case.label}]" for spec, case in ROWS]
# Ops that must read index values on the host to raise a clear out-of-range error.
VALIDATING_OPS = {"embedding", "cross_entropy", "cross_entropy_smooth", "gather", "nll_loss",
                  "binary_cross_entropy", "index_select",
                  # read LAPACK's info / the rank to raise or answer as torch (which syncs too):
                  # cholesky's not-positive-definite error, cond's inf at a singular matrix,
                  # lstsq's residuals (present only at full rank)
                  "cholesky", "cholesky_upper", "cond_fro", "cond_inf", "lstsq_residuals",
                  # a q tensor's values must lie in [0, 1] (torch reads them too, .item())
                  "quantile_q_tensor",
                  # check that every index lies in the output, as torch's kernel does
                  "max_unpool1d", "max_unpool2d", "max_unpool3d"}


@pytest.mark.parametrize("spec,case", ROWS, ids=IDS)
def test_op_runs_on_device_without_leaks_and_matches_cpu(spec, case):
    cpu_inputs = make_inputs(case)
    dev_inputs = make_inputs(case, device=DEVICE)
    strict_device.SYNCS.clear()
    out = spec.fn(*dev_inputs)
    assert out.device == DEVICE
    upstream = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(ta.tensor(upstream, dtype=out.dtype, device=DEVICE))
    if spec.name not in VALIDATING_OPS:
        assert not strict_device.SYNCS, f"host syncs in {spec.name}: {dict(strict_device.SYNCS)}"
    ref = spec.fn(*cpu_inputs)
    ref.backward(upstream)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)
    for d, c in zip(dev_inputs, cpu_inputs):
        if c.requires_grad:
            assert d.grad.device == DEVICE
            np.testing.assert_allclose(d.grad.numpy(), c.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_gradcheck_runs_on_the_device():
    x = ta.tensor(np.random.default_rng(0).standard_normal((3, 4)), dtype="float64",
                  requires_grad=True, device=DEVICE)
    assert ta.gradcheck(lambda t: t.softmax(-1) * t, [x])


class LeakyExp(Function):
    """A planted bug: np.exp instead of xp.exp. Fine on the CPU, broken on a GPU."""

    def forward(self, x):
        return np.exp(x)

    def backward(self, grad):
        return grad


def test_negative_control_a_numpy_call_on_device_data_is_caught():
    x = ta.tensor([1.0, 2.0], device=DEVICE)
    with pytest.raises(TypeError, match="strict-device"):
        LeakyExp.apply(x)
    LeakyExp.apply(ta.tensor([1.0, 2.0]))  # the same bug passes on the CPU


def test_negative_control_implicit_conversion_is_refused():
    x = ta.tensor([1.0, 2.0], device=DEVICE)
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(x.data)


def test_negative_control_a_host_sync_is_counted():
    x = ta.tensor([1.0, 2.0], device=DEVICE)
    strict_device.SYNCS.clear()
    float(x.data.sum())
    assert sum(strict_device.SYNCS.values()) == 1


def test_mixing_devices_names_both():
    with pytest.raises(RuntimeError, match="different devices \\(cpu and strict\\)"):
        ta.randn(2) + ta.randn(2, device=DEVICE)


def test_to_and_back_is_differentiable():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    y = (x.to(DEVICE) * 3.0).to("cpu").sum()
    y.backward()
    np.testing.assert_allclose(x.grad, [3.0, 3.0])
    assert x.grad.device == "cpu"


def test_negative_control_mixing_a_host_array_into_device_math_is_refused():
    x = ta.tensor([1.0, 2.0], device=DEVICE)
    with pytest.raises(TypeError, match="host NumPy array"):
        x.data * np.ones(2)


def test_a_numpy_generator_on_a_device_draws_there():
    from tinyattn import functional as F
    x = ta.ones(4, device=DEVICE)
    out = F.dropout(x, 0.5, generator=np.random.default_rng(0))
    assert out.device == DEVICE


def test_invert_on_the_device_returns_a_new_mask_and_leaves_the_original():
    mask = ta.tensor([True, False], device=DEVICE)
    flipped = ~mask
    np.testing.assert_array_equal(flipped.numpy(), [False, True])
    np.testing.assert_array_equal(mask.numpy(), [True, False])
