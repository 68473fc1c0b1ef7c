"""autocast: every op tinyattn has, run inside ``autocast("cpu")`` here and inside torch's on
the same inputs, gives torch's output dtype; the CUDA policy (float16), which torch cannot
run without a GPU, is checked op by op against torch's documented lists by running tinyattn's
CPU tensors under the CUDA table. Plus the context manager's semantics."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import autograd
from tinyattn.amp import dispatch, policy
from tinyattn.precision import BFLOAT16

torch = pytest.importorskip("torch", reason="torch's autocast is the oracle")
tF = torch.nn.functional

from torch_op_pairs import OPS, dtype_name, inputs_for  # noqa: E402 - after the skip


@pytest.mark.parametrize("low_name", ["bfloat16", "float16"])
def test_every_op_has_torchs_output_dtype_inside_cpu_autocast(low_name):
    seen = set()
    recorder = _record_classes(seen)
    failures = []
    for name, (ours_fn, theirs_fn, spec) in OPS.items():
        ours, theirs = inputs_for(spec, low_name)
        with ta.autocast("cpu", dtype=low_name), recorder:
            got = ours_fn(*ours)
        if (name, low_name) in _TORCH_HAS_NO_KERNEL:
            with pytest.raises(RuntimeError), torch.autocast("cpu", dtype=torch.float16):
                theirs_fn(*theirs)               # still so: else compare it again
            continue
        try:
            with torch.autocast("cpu", dtype=getattr(torch, low_name)):
                want = dtype_name(theirs_fn(*theirs).dtype)
        except RuntimeError as error:
            if name not in _ONEDNN_NEEDS_CPU_SUPPORT or "primitive descriptor" not in str(error):
                raise
            want = low_name     # torch's autocast lists it in the low dtype (see below)
        if dtype_name(got.dtype) != want:
            failures.append(f"{name}: tinyattn {got.dtype}, torch {want}")
    assert not failures, failures
    assert _function_classes() - seen - _NOT_REACHABLE == set(), "ops left untested"


# torch raises inside its CPU autocast here; tinyattn's result (the low dtype) is compared
# under bfloat16 only
_TORCH_HAS_NO_KERNEL = {("lstm", "float16")}  # oneDNN's CPU LSTM has no float16 primitive
# oneDNN's bfloat16 LSTM primitive needs CPU support that some machines lack (an AMD EPYC
# without AVX512-BF16: "could not create a primitive descriptor"); torch's CPU autocast lists
# lstm among its lower-precision ops, so there the expected dtype is the low dtype itself
_ONEDNN_NEEDS_CPU_SUPPORT = {"lstm"}

_NOT_REACHABLE = {  # Function classes with no torch equivalent to compare in this table
    "_PyTorchStyleNode", "TiledAttention", "PackedSelfAttention", "Rope",
    "LocalAttention", "PerformerAttention",     # docs/long_sequences.md: torch has neither
    "CheckpointFunction", "_SegmentOutput",     # checkpoint's wrappers: the ops inside are cast
    "_FunctionOutput",                          # a custom Function's several outputs
    "_BackwardHookIdentity",                    # module backward hooks: passes values through
    "PackedRows",                               # MHA's q/k/v weight rows read in place (cat)
    "NoDerivative", "Unique2", "UniqueDim",     # unique's nodes: values already computed,
    "UniqueConsecutive",                        # a backward that raises (no_derivative.py)
    # complex numbers and torch.fft: torch's CPU autocast lists none of them, and their
    # inputs are complex or float32/float64 (half is refused: no complex32, no half FFT)
    "Real", "Imag", "Conj", "ComplexAbs", "Angle", "MakeComplex", "Polar", "ViewAsReal",
    "ViewAsComplex", "C2C", "R2C", "C2R", "RealC2C"}


# decompositions and solvers: on torch's CPU float32 list, on neither CUDA list, and without
# a float16 kernel in torch (cuSOLVER/MAGMA) or tinyattn
_NO_HALF_KERNEL_OFF_THE_CUDA_LISTS = {"cholesky_half", "cholesky_ex_half", "qr_half", "eigh_half",
                                      "svd_half", "triangular_solve_half", "pinverse_half",
                                      "lstsq_half",
                                      "quantile"}  # "must be either float or double" on CUDA


def _function_classes():
    def walk(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from walk(sub)
    return {c.__name__ for c in walk(autograd.Function) if c.__module__.startswith("tinyattn")}


class _record_classes:
    """Records the Function classes applied inside (wraps the dispatch hook)."""

    def __init__(self, seen):
        self.seen = seen

    def __enter__(self):
        self.previous = autograd.function.dispatch_hook
        inner = dispatch._hook

        def hook(cls, inputs, options):
            self.seen.add(cls.__name__)
            return inner(cls, inputs, options)
        autograd.function.dispatch_hook = hook

    def __exit__(self, *exc):
        autograd.function.dispatch_hook = self.previous


def test_the_dtype_comparison_can_fail():
    """Negative control: with the policy switched off (no casts), linear stays float32 where
    torch's autocast gives bfloat16."""
    x, w = ta.randn(2, 3), ta.randn(4, 3)
    with ta.autocast("cpu", enabled=False):
        assert F.linear(x, w).dtype == np.float32
    with torch.autocast("cpu"):
        assert tF.linear(torch.randn(2, 3), torch.randn(4, 3)).dtype == torch.bfloat16


# ------------------------------------------------------------------ the CUDA table
# torch's documented CUDA lists (torch.amp docs, "CUDA Ops that can autocast to float16 /
# float32"), for the ops above: the dtype each gives from float32 (and float16) inputs
CUDA_FLOAT16 = {"matmul", "mm", "bmm", "addmm", "linear", "linear_no_bias", "mv", "dot",
                "sdpa", "sdpa_causal", "einsum", "prelu", "prelu_half",
                "lstm", "gru", "rnn", "lstm_cell", "gru_cell"}   # cuDNN RNNs, *Cell
CUDA_FLOAT32 = {"pow", "pow_tensor", "exp", "log", "log_half", "log2", "softplus", "sum",
                "prod", "prod_f32", "cumsum", "cumprod", "norm", "rsqrt", "softmax",
                "log_softmax", "layer_norm", "layer_norm_f32", "cross_entropy", "nll_loss",
                "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
                "bce_with_logits", "reciprocal", "log1p", "expm1", "logsumexp",
                "cosine_similarity", "erfinv"}


def test_the_cuda_policy_matches_torchs_documented_lists(monkeypatch):
    """torch cannot run CUDA autocast without a GPU, so tinyattn's CUDA table is applied to
    CPU tensors (the device lookup is redirected) with float16, and each op's output dtype
    is compared with torch's documented CUDA lists."""
    by_name, by_class = policy.kind_of_name, policy.cast_kind
    monkeypatch.setattr(policy, "kind_of_name", lambda device, name: by_name("cuda", name))
    monkeypatch.setattr(policy, "cast_kind", lambda device, name: by_class("cuda", name))
    monkeypatch.setattr(dispatch, "_kinds", {})
    failures = []
    with ta.autocast("cpu", dtype="float16"):
        for name, (ours_fn, _, spec) in OPS.items():
            if name in ("matmul_f64", "to", "dot", "mv", "outer"):
                continue             # float64 stays; dot/mv promote/lower by composition
            ours, _ = inputs_for(spec, "float16")
            if name == "bce":                  # refused by CUDA autocast, as in torch
                with pytest.raises(RuntimeError, match="unsafe to autocast"):
                    ours_fn(*ours)
                continue
            if name in _NO_HALF_KERNEL_OFF_THE_CUDA_LISTS:
                with pytest.raises(RuntimeError, match="Half|float and double|float, double"):
                    ours_fn(*ours)             # not on the CUDA lists: float16 reaches the
                continue                       # op, which has no float16 kernel (as torch)
            got = ours_fn(*ours).dtype
            if name in CUDA_FLOAT16 and got != np.float16:
                failures.append(f"{name}: {got}, CUDA list says float16")
            if name in CUDA_FLOAT32 and got != np.float32:
                failures.append(f"{name}: {got}, CUDA list says float32")
    assert not failures, failures
    assert "dot" in policy.CUDA_LISTS[policy.PROMOTE] and "mv" in policy.CUDA_LISTS[policy.LOWER]


# ------------------------------------------------------------------ semantics
def test_values_and_gradients_match_torch_for_a_small_model():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w1, w2 = (rng.standard_normal((32, 16)) * 0.2).astype(np.float32), \
        (rng.standard_normal((4, 32)) * 0.2).astype(np.float32)
    y = rng.integers(0, 4, size=8)
    ours = [ta.tensor(a, requires_grad=True) for a in (w1, w2)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (w1, w2)]
    with ta.autocast("cpu"):
        logits = F.linear(F.relu(F.linear(ta.tensor(x), ours[0])), ours[1])
        loss = F.cross_entropy(logits, ta.tensor(y))
    with torch.autocast("cpu"):
        t_logits = tF.linear(tF.relu(tF.linear(torch.tensor(x), theirs[0])), theirs[1])
        t_loss = tF.cross_entropy(t_logits, torch.tensor(y))
    assert logits.dtype == BFLOAT16 and loss.dtype == np.float32
    np.testing.assert_allclose(logits.float().detach().numpy(),
                               t_logits.float().detach().numpy(), atol=2e-2)
    assert abs(loss.item() - t_loss.item()) < 1e-2
    loss.backward()
    t_loss.backward()
    for a, b in zip(ours, theirs):
        assert a.grad.dtype == np.float32          # back to the float32 parameters
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=2e-2, rtol=5e-2)


def test_nesting_decorator_and_state_queries():
    x, w = ta.randn(2, 3), ta.randn(3, 3)
    assert not ta.amp.is_autocast_enabled("cpu")
    with ta.autocast("cpu"):
        assert ta.amp.is_autocast_enabled("cpu") and not ta.amp.is_autocast_enabled("cuda")
        assert (x @ w).dtype == BFLOAT16
        with ta.autocast("cpu", enabled=False):
            assert (x @ w).dtype == np.float32 and not ta.amp.is_autocast_enabled("cpu")
        with ta.autocast("cpu", dtype="float16"):
            assert (x @ w).dtype == np.float16
            assert ta.amp.get_autocast_dtype("cpu") == "float16"
        assert (x @ w).dtype == BFLOAT16
    assert (x @ w).dtype == np.float32

    @ta.autocast("cpu")
    def product(a, b):
        return a @ b
    assert product(x, w).dtype == BFLOAT16 and product.__name__ == "product"
    assert (x @ w).dtype == np.float32
    assert ta.amp.autocast is ta.autocast


def test_autocast_is_per_thread():
    x, w = ta.randn(2, 3), ta.randn(3, 3)
    seen = []
    with ta.autocast("cpu"):
        thread = threading.Thread(target=lambda: seen.append((x @ w).dtype))
        thread.start()
        thread.join()
        assert (x @ w).dtype == BFLOAT16
    assert seen == [np.float32]


def test_cuda_autocast_leaves_cpu_tensors_alone_and_bad_arguments_are_named():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        region = ta.autocast("cuda")
    with region:
        assert (ta.randn(2, 3) @ ta.randn(3, 2)).dtype == np.float32
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        ta.autocast("tpu")
    with pytest.warns(UserWarning, match="Disabling autocast"):
        ta.autocast("cpu", dtype="float64")


def test_parameters_are_cast_once_per_region_as_torchs_cache():
    w = ta.randn(3, 3, requires_grad=True)
    with ta.autocast("cpu"):
        ta.randn(2, 3) @ w
        ta.randn(2, 3) @ w
        assert len(dispatch.autocast_state.cache) == 1       # one bfloat16 copy of w
        with ta.autocast("cpu"):                            # nested: the same region
            ta.randn(2, 3) @ w
            assert len(dispatch.autocast_state.cache) == 1
    assert len(dispatch.autocast_state.cache) == 0           # dropped with the region
    with ta.autocast("cpu", cache_enabled=False):
        ta.randn(2, 3) @ w
        assert len(dispatch.autocast_state.cache) == 0


def test_a_cast_cached_under_no_grad_does_not_cut_the_graph_later():
    w = ta.randn(3, 3, requires_grad=True)
    with ta.autocast("cpu"):
        with ta.no_grad():
            ta.randn(2, 3) @ w
        (ta.randn(2, 3) @ w).float().sum().backward()
    assert w.grad is not None and w.grad.dtype == np.float32


def test_in_place_ops_keep_the_target_dtype_and_send_float32_gradients_as_torch():
    def run(lib, autocast):
        w = lib.ones(3, 3, requires_grad=True)
        b = lib.ones(3, requires_grad=True)
        with autocast("cpu"):
            h = lib.ones(2, 3) @ w
            h += b
            h *= b
        h.float().sum().backward()
        return dtype_name(h.dtype), dtype_name(w.grad.dtype), dtype_name(b.grad.dtype), \
            b.grad.float().tolist()
    assert run(ta, ta.autocast) == run(torch, torch.autocast)


def test_float32_programs_run_without_the_hook():
    """The cost when autocast is off and no half tensor exists: one global check per op."""
    import subprocess
    import sys
    code = ("import tinyattn as ta; from tinyattn import autograd\n"
            "x = ta.randn(3, 3, requires_grad=True); (x @ x).sum().backward()\n"
            "assert autograd.function.dispatch_hook is None\n"
            "with ta.autocast('cpu'): assert autograd.function.dispatch_hook is not None\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "ok", out.stderr
