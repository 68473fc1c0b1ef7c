"""float16 and bfloat16 through every op: output dtypes, values and gradients, against the
float64 reference of the op table and against torch's CPU kernels (compute in float32, round
once), plus the dtype plumbing (names, printing, save/load, finfo) and the float16 pitfalls."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn.optable import OP_TABLE, make_inputs
from tinyattn.optable import decompositions as optable_decompositions
from tinyattn.optable import distances as optable_distances
from tinyattn.optable import linalg_solvers as optable_linalg_solvers
from tinyattn.precision import BFLOAT16

HALF = {"bfloat16": BFLOAT16, "float16": np.dtype(np.float16)}


def _eps(dtype: np.dtype) -> float:
    return float(ml_dtypes.finfo(dtype).eps)


# ------------------------------------------------------------------ the op table
TORCH_WIDENS = {"bincount_weights": np.dtype(np.float64)}   # torch.bincount: half weights
                                                            # give float64 counts
# rows whose torch CPU kernel rounds every step to the half dtype, as tinyattn then does
# (grid_sample's bicubic: 16 rounded products and sums, and weights from rounded
# polynomials): their error is that of many roundings, not one
STEPWISE_HALF = {"grid_sample_bicubic_border": 32}
# rows whose op torch refuses in float16 and bfloat16 on the CPU ("cholesky_cpu" not
# implemented for 'Half', "doesn't handle types other than float and double"): tinyattn
# refuses them too, and these tests check that it does
TORCH_REFUSES_HALF = {spec.name for spec in optable_decompositions.ROWS
                      + optable_linalg_solvers.ROWS if not spec.name.startswith("matrix_exp")}
# cdist and pdist ('"cdist" not implemented for 'Half''; cdist's matrix-product path, p = 2
# with more than 25 rows, is matmuls and takes half), quantile ("must be either float or
# double dtype")
TORCH_REFUSES_HALF |= {spec.name for spec in optable_distances.ROWS
                       if spec.name != "cdist_p2_matrix_product"}
TORCH_REFUSES_HALF |= {spec.name for spec in OP_TABLE if spec.name.startswith(
    ("quantile", "nanquantile"))}
# "avg_pool3d_out_frame" not implemented for 'Half' (local_response_norm of 4-D pools with it)
# complex numbers and torch.fft: "Unsupported dtype Half" (torch's CPU FFT); half inputs of
# complex(), polar(), view_as_complex() would give torch's complex32, which tinyattn lacks
# and refuses (with "float and double" in its message)
TORCH_REFUSES_HALF |= {spec.name for spec in OP_TABLE if spec.name.startswith(
    ("complex.", "fft.")) and spec.name != "fft.fftshift"}
TORCH_REFUSES_HALF |= {"avg_pool3d", "local_response_norm_4d",
                       "ctc_loss"}                  # "ctc_loss_cpu" takes float and double
# '"compute_index_ranges_weights" not implemented for 'Half'' (antialiased interpolation)
TORCH_REFUSES_HALF |= {"interpolate_bilinear_antialias", "interpolate_bicubic_antialias"}



def _refuses_half(spec, inputs) -> bool:
    if spec.name not in TORCH_REFUSES_HALF:
        return False
    with pytest.raises(RuntimeError, match="Half|BFloat16|float and double|float, double"):
        spec.fn(*inputs)
    return True

@pytest.mark.parametrize("dtype_name", sorted(HALF))
@pytest.mark.parametrize("spec", OP_TABLE, ids=[s.name for s in OP_TABLE])
def test_every_op_table_op_runs_in_half_precision(spec, dtype_name):
    """Output and gradients keep the half dtype; the values are the float64 reference of
    the rounded inputs, within a few units of the half precision (one rounding per op)."""
    dtype = HALF[dtype_name]
    eps = _eps(dtype)
    for case in spec.cases(np.random.default_rng(0)):
        inputs = make_inputs(case, dtype=dtype)
        if _refuses_half(spec, inputs):
            continue
        out = spec.fn(*inputs)
        assert out.dtype == TORCH_WIDENS.get(spec.name, dtype), (spec.name, case.label,
                                                                  out.dtype)
        rounded = [a.astype(dtype).astype(np.float64) if a.dtype.kind == "f" else a
                   for a in case.arrays]
        expected = np.asarray(spec.reference(*rounded), dtype=np.float64)
        got = out.detach().float().numpy().astype(np.float64)
        scale = max(1.0, float(np.abs(expected).max())) if expected.size else 1.0
        np.testing.assert_allclose(got, expected, rtol=0,
                                   atol=STEPWISE_HALF.get(spec.name, 8) * eps * scale,
                                   err_msg=f"{spec.name} {case.label}")
        out.float().sum().backward()
        for t in inputs:
            if t.requires_grad:
                assert t.grad is not None and t.grad.dtype == dtype, (spec.name, case.label)


def test_the_op_table_check_can_fail():
    """Negative control: a result rounded to float16 twice over a long sum is outside the
    tolerance used above (so that check is not vacuous)."""
    values = np.full(4096, 0.1, dtype=np.float16)
    naive = np.float16(0)
    for v in values[:2048]:                       # float16 accumulation, rounding each step
        naive = np.float16(naive + v)
    exact = 0.1 * 2048
    assert abs(float(naive) - exact) > 8 * _eps(np.dtype(np.float16)) * exact


# ------------------------------------------------------------------ against torch
def _torch_ops():
    torch = pytest.importorskip("torch", reason="torch is the oracle for the half-dtype ops")
    tF = torch.nn.functional
    ops = {
        # name: (tinyattn fn, torch fn, shapes); inputs are random normal
        "add": (lambda a, b: a + b, lambda a, b: a + b, [(3, 4), (4,)]),
        "mul": (lambda a, b: a * b, lambda a, b: a * b, [(3, 4), (3, 4)]),
        "div": (lambda a, b: a / (b.abs() + 1), lambda a, b: a / (b.abs() + 1),
                [(3, 4), (3, 4)]),
        "exp": (ta.exp, torch.exp, [(3, 4)]),
        "log": (lambda x: ta.log(x.abs() + 0.1), lambda x: torch.log(x.abs() + 0.1), [(3, 4)]),
        "tanh": (ta.tanh, torch.tanh, [(3, 4)]),
        "sigmoid": (ta.sigmoid, torch.sigmoid, [(3, 4)]),
        "gelu": (F.gelu, tF.gelu, [(3, 4)]),
        "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                      lambda x: tF.gelu(x, approximate="tanh"), [(3, 4)]),
        "silu": (F.silu, tF.silu, [(3, 4)]),
        "softplus": (F.softplus, tF.softplus, [(3, 4)]),
        "sum": (lambda x: x.sum(), lambda x: x.sum(), [(64, 33)]),
        "sum_dim": (lambda x: x.sum(-1), lambda x: x.sum(-1), [(5, 300)]),
        "mean": (lambda x: x.mean(0), lambda x: x.mean(0), [(300, 5)]),
        "var": (lambda x: x.var(-1), lambda x: x.var(-1), [(4, 50)]),
        "norm": (lambda x: x.norm(), lambda x: x.norm(), [(6, 7)]),
        "cumsum": (lambda x: x.cumsum(-1), lambda x: x.cumsum(-1), [(3, 40)]),
        "prod": (lambda x: (x * 0.1 + 1).prod(-1), lambda x: (x * 0.1 + 1).prod(-1), [(3, 8)]),
        "amax": (lambda x: x.amax(-1), lambda x: x.amax(-1), [(3, 8)]),
        "logsumexp": (lambda x: ta.logsumexp(x, -1), lambda x: torch.logsumexp(x, -1),
                      [(3, 8)]),
        "matmul": (ta.matmul, torch.matmul, [(2, 5, 64), (64, 7)]),
        "bmm": (ta.bmm, torch.bmm, [(2, 5, 64), (2, 64, 3)]),
        "linear": (F.linear, tF.linear, [(4, 96), (8, 96), (8,)]),
        "softmax": (lambda x: F.softmax(x, -1), lambda x: tF.softmax(x, -1), [(3, 50)]),
        "log_softmax": (lambda x: F.log_softmax(x, -1), lambda x: tF.log_softmax(x, -1),
                        [(3, 50)]),
        "layer_norm": (lambda x, w, b: F.layer_norm(x, (32,), w, b),
                       lambda x, w, b: tF.layer_norm(x, (32,), w, b), [(3, 32), (32,), (32,)]),
        "mse_loss": (F.mse_loss, tF.mse_loss, [(6, 9), (6, 9)]),
        "l1_loss": (F.l1_loss, tF.l1_loss, [(6, 9), (6, 9)]),
        "sdpa": (F.scaled_dot_product_attention, tF.scaled_dot_product_attention,
                 [(1, 2, 5, 8), (1, 2, 5, 8), (1, 2, 5, 8)]),
        "cat": (lambda a, b: ta.cat([a, b], 0), lambda a, b: torch.cat([a, b], 0),
                [(2, 3), (1, 3)]),
        "transpose": (lambda x: x.transpose(0, 1) * 1, lambda x: x.transpose(0, 1) * 1,
                      [(2, 3)]),
        "where": (lambda a, b: ta.where(a > 0, a, b), lambda a, b: torch.where(a > 0, a, b),
                  [(3, 4), (3, 4)]),
        "pow": (lambda x: x.abs() ** 1.5, lambda x: x.abs() ** 1.5, [(3, 4)]),
        "rsqrt": (lambda x: ta.rsqrt(x.abs() + 0.5), lambda x: torch.rsqrt(x.abs() + 0.5),
                  [(3, 4)]),
        "clamp": (lambda x: x.clamp(-0.5, 0.5), lambda x: x.clamp(-0.5, 0.5), [(3, 4)]),
        "einsum": (lambda a, b: ta.einsum("ij,jk->ik", a, b),
                   lambda a, b: torch.einsum("ij,jk->ik", a, b), [(4, 40), (40, 3)]),
    }
    return torch, ops


def _as_torch_dtype(torch, name):
    return {"bfloat16": torch.bfloat16, "float16": torch.float16}[name]


@pytest.mark.parametrize("dtype_name", sorted(HALF))
def test_ops_match_torchs_cpu_kernels_in_half_precision(dtype_name):
    """Same inputs in bfloat16/float16: tinyattn's outputs and input gradients have torch's
    dtypes and torch's values within two units of the half precision (torch computes each
    kernel in float32 and rounds once; so does tinyattn)."""
    torch, ops = _torch_ops()
    dtype, tdtype = HALF[dtype_name], _as_torch_dtype(torch, dtype_name)
    eps = _eps(dtype)
    failures = []
    for name, (ours, theirs, shapes) in ops.items():
        rng = np.random.default_rng(1)
        arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
        xs = [ta.tensor(a, requires_grad=True) for a in arrays]
        ts = [torch.tensor(a.astype(np.float32)).to(tdtype).requires_grad_() for a in arrays]
        out, ref = ours(*xs), theirs(*ts)
        if str(out.dtype) != str(ref.dtype).replace("torch.", ""):
            failures.append(f"{name}: dtype {out.dtype} vs {ref.dtype}")
            continue
        got, want = out.detach().float().numpy(), ref.detach().float().numpy()
        tol = 2 * eps * max(1.0, float(np.abs(want).max()))
        if not np.allclose(got, want, rtol=2 * eps, atol=tol):
            failures.append(f"{name}: max |diff| {np.abs(got - want).max():.3g}")
        weights = np.random.default_rng(2).standard_normal(want.shape).astype(np.float32)
        (out.float() * ta.tensor(weights)).sum().backward()
        (ref.float() * torch.tensor(weights)).sum().backward()
        for i, (x, t) in enumerate(zip(xs, ts)):
            g, h = x.grad.float().numpy(), t.grad.float().numpy()
            assert x.grad.dtype == dtype
            gtol = 4 * eps * max(1.0, float(np.abs(h).max()))
            if not np.allclose(g, h, rtol=4 * eps, atol=gtol):
                failures.append(f"{name}: grad {i} max |diff| {np.abs(g - h).max():.3g}")
    assert not failures, failures


@pytest.mark.parametrize("dtype_name", sorted(HALF))
def test_sums_accumulate_in_float32_as_torch_where_numpy_rounds_every_step(dtype_name):
    """4096 copies of 0.1. torch (and tinyattn) accumulate in float32 and round once: 409.5
    (float16) or 410 (bfloat16). NumPy rounds each step of float16 cumsum to float16, which
    stalls at 256 (256 + 0.1 rounds back to 256); ml-dtypes' bfloat16 sum and cumsum do the
    same and stall at 32. (NumPy's float16 sum uses float32 partial sums and agrees.)"""
    torch = pytest.importorskip("torch")
    dtype = HALF[dtype_name]
    values = np.full(4096, 0.1, dtype=dtype)
    t = torch.tensor(values.astype(np.float32)).to(_as_torch_dtype(torch, dtype_name))
    x = ta.tensor(values)
    assert x.sum().item() == t.sum().item() and x.mean().item() == t.mean().item()
    assert x.cumsum(0)[-1].item() == t.cumsum(0)[-1].item()
    assert float(np.cumsum(values)[-1]) == {"float16": 256.0, "bfloat16": 32.0}[dtype_name]
    if dtype_name == "bfloat16":
        assert float(values.sum()) == 32.0 != t.sum().item()


# ------------------------------------------------------------------ dtype plumbing
def test_bfloat16_names_factories_conversions_and_printing():
    x = ta.tensor([1.0, 2.5, 1 / 3], dtype="bfloat16")
    assert x.dtype == BFLOAT16 and str(x.dtype) == "bfloat16"
    assert ta.bfloat16 == "bfloat16"
    assert x.float().bfloat16().dtype == BFLOAT16 and x.to(ta.bfloat16) is x
    assert x.is_floating_point()
    for made in (ta.zeros(2, dtype=ta.bfloat16), ta.ones(2, dtype="bfloat16"),
                 ta.randn(2, dtype="bfloat16"), ta.full((2,), 1.5, dtype="bfloat16"),
                 ta.arange(3, dtype="bfloat16"), ta.zeros_like(x), ta.rand(2, dtype="bfloat16")):
        assert made.dtype == BFLOAT16
    assert x.tolist()[2] == pytest.approx(0.333984375)     # 1/3 rounded to 8 bits
    assert "0.334" in repr(x) and "dtype=bfloat16" in repr(x)
    w = ta.randn(3, requires_grad=True)
    (w.bfloat16() * 2).float().sum().backward()
    assert w.grad.dtype == np.float32                # the cast passes gradients back


def test_printing_matches_torch():
    torch = pytest.importorskip("torch")
    values = [0.1, -2.5, 3.0]
    ours = repr(ta.tensor(values, dtype="bfloat16"))
    theirs = repr(torch.tensor(values, dtype=torch.bfloat16))
    import re
    numbers = [re.findall(r"-?\d+\.\d*", text.split("dtype")[0]) for text in (ours, theirs)]
    assert [float(v) for v in numbers[0]] == [float(v) for v in numbers[1]]   # 0.1001, ...
    assert ours.split("dtype=")[1] == theirs.split("dtype=torch.")[1]      # NumPy's layout


def test_mixing_half_dtypes_promotes_as_torch_and_strict_mode_refuses():
    """torch promotes bfloat16 + float16 to float32; so does tinyattn, and its strict mode
    refuses the mix and says how to convert."""
    a, b = ta.ones(2, dtype="bfloat16"), ta.ones(2, dtype="float16")
    assert (a + b).dtype == np.float32
    with ta.strict_promotion(), pytest.raises(TypeError, match="bfloat16 and float16"):
        a + b
    assert (a.float() + b.float()).dtype == np.float32


def test_finfo_and_iinfo_have_torchs_fields():
    torch = pytest.importorskip("torch")
    for name in ("float16", "bfloat16", "float32", "float64"):
        ours, theirs = ta.finfo(name), torch.finfo(getattr(torch, name))
        for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
            assert getattr(ours, field) == getattr(theirs, field), (name, field)
        assert ours.dtype == theirs.dtype
    for name in ("uint8", "int8", "int16", "int32", "int64"):
        ours, theirs = ta.iinfo(name), torch.iinfo(getattr(torch, name))
        assert (ours.bits, ours.min, ours.max, ours.dtype) == (
            theirs.bits, theirs.min, theirs.max, theirs.dtype)
    with pytest.raises(TypeError, match="iinfo"):
        ta.finfo("int32")


def test_save_load_and_safetensors_keep_bfloat16(tmp_path):
    x = ta.randn(3, 4, dtype="bfloat16")
    ta.save({"x": x}, tmp_path / "a.pt")
    loaded = ta.load(tmp_path / "a.pt")["x"]
    assert loaded.dtype == BFLOAT16
    np.testing.assert_array_equal(np.asarray(loaded).view(np.uint16), x.numpy().view(np.uint16))
    from tinyattn.io.safetensors import load_safetensors, save_safetensors
    save_safetensors({"x": x}, tmp_path / "a.safetensors")
    widened = load_safetensors(tmp_path / "a.safetensors")["x"]
    kept = load_safetensors(tmp_path / "a.safetensors", keep_bfloat16=True)["x"]
    assert widened.dtype == np.float32 and kept.dtype == BFLOAT16
    np.testing.assert_array_equal(widened, x.float().numpy())
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file
    theirs = load_file(str(tmp_path / "a.safetensors"))["x"]
    assert theirs.dtype == torch.bfloat16
    np.testing.assert_array_equal(theirs.float().numpy(), x.float().numpy())


# ------------------------------------------------------------------ float16 pitfalls
@pytest.mark.parametrize("dtype_name,value", [("float16", -1e9), ("float16", 65519.0),
                                              ("bfloat16", -1e39)])
def test_masked_fill_beyond_the_range_raises_torchs_overflow_error(dtype_name, value):
    torch = pytest.importorskip("torch")
    mask = np.array([True, False, True])
    x = ta.zeros(3, dtype=dtype_name)
    with pytest.raises(RuntimeError) as ours:
        x.masked_fill(ta.tensor(mask), value)
    t = torch.zeros(3, dtype=getattr(torch, dtype_name))
    with pytest.raises(RuntimeError) as theirs:
        t.masked_fill(torch.tensor(mask), value)
    assert str(theirs.value) in str(ours.value)          # torch's words, then advice
    assert f"{value:g}" in str(ours.value) and dtype_name in str(ours.value)
    for call in (lambda: x.clone().fill_(value), lambda: ta.full((2,), value, dtype=x.dtype),
                 lambda: x.masked_fill_(ta.tensor(mask), value)):
        with pytest.raises(RuntimeError, match="without overflow"):
            call()


def test_masks_that_fit_pass_as_in_torch():
    x = ta.zeros(3, dtype="float16")
    mask = ta.tensor([True, False, True])
    assert x.masked_fill(mask, float("-inf")).tolist()[0] == float("-inf")
    assert x.masked_fill(mask, ta.finfo(x.dtype).min).tolist()[0] == -65504.0
    assert x.masked_fill(mask, -1e4).dtype == np.float16
    assert ta.zeros(2, dtype="float32").masked_fill(ta.tensor([True, True]), -1e9).tolist() \
        == [-1e9, -1e9]


def test_softmax_of_unscaled_float16_scores_matches_torch():
    """Scores q k^T of width-256 heads reach thousands; exp of them overflows float16, but
    softmax (computed in float32, as torch's kernel) still gives finite probabilities.
    The same scores exponentiated in float16 by hand give inf/NaN."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    q = (rng.standard_normal((4, 256)) * 3).astype(np.float16)
    k = (rng.standard_normal((6, 256)) * 3).astype(np.float16)
    scores = ta.tensor(q) @ ta.tensor(k).T                   # no 1/sqrt(d_k): unscaled
    assert float(scores.abs().max()) > 11                     # exp(11) > 65504
    ours = F.softmax(scores, -1)
    theirs = torch.softmax(torch.tensor(q) @ torch.tensor(k).T, -1)
    assert ours.dtype == np.float16 and np.isfinite(ours.float().numpy()).all()
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), atol=1e-3)
    with np.errstate(over="ignore", invalid="ignore"):
        by_hand = np.exp(scores.numpy()) / np.exp(scores.numpy()).sum(-1, keepdims=True)
    assert not np.isfinite(by_hand).all()


def test_float16_ops_on_the_gpu_stand_in_match_the_cpu_without_host_copies():
    """The half-precision path (casts around each op) on the strict device, which refuses
    NumPy as CuPy does: the same numbers as the CPU, and no host syncs."""
    from tinyattn import strict_device
    strict_device.enable()
    validating = {"embedding", "cross_entropy", "cross_entropy_smooth", "gather", "nll_loss",
                  "binary_cross_entropy", "index_select",
                  "max_unpool1d", "max_unpool2d", "max_unpool3d"}     # (index range checks)
    for spec in OP_TABLE:
        for case in spec.cases(np.random.default_rng(0)):
            xs = make_inputs(case, dtype=np.float16, device=strict_device.DEVICE)
            if _refuses_half(spec, xs):
                continue
            strict_device.SYNCS.clear()
            out = spec.fn(*xs)
            out.backward(ta.ones(out.shape, dtype=out.dtype, device=strict_device.DEVICE))
            assert out.dtype == TORCH_WIDENS.get(spec.name, np.float16), spec.name
            assert out.device == strict_device.DEVICE
            assert spec.name in validating or not strict_device.SYNCS, spec.name
            ref = spec.fn(*make_inputs(case, dtype=np.float16))
            np.testing.assert_array_equal(out.numpy(), ref.numpy(), err_msg=spec.name)


@pytest.mark.parametrize("dtype_name", sorted(HALF))
def test_every_paired_op_matches_torch_in_half_precision(dtype_name):
    """The tinyattn/torch call pairs of tests/torch_op_pairs.py (every Function class),
    all floating inputs in the half dtype, outside autocast: torch's output dtype, and
    torch's values within two units of the half precision."""
    torch = pytest.importorskip("torch")
    from torch_op_pairs import OPS, inputs_for
    dtype, eps = HALF[dtype_name], _eps(HALF[dtype_name])
    failures = []
    for name, (ours_fn, theirs_fn, spec) in OPS.items():
        if name in ("dropout", "normal", "matmul_f64", "to"):
            continue                      # random draws; float64 by design
        ours, theirs = inputs_for(spec, dtype_name, all_half=True)
        try:
            want = theirs_fn(*theirs)
        except (RuntimeError, NotImplementedError) as exc:   # no half kernel in torch
            if "not implemented" not in str(exc) and \
                    "Low precision dtypes not supported" not in str(exc) and \
                    "float and double" not in str(exc) and \
                    "float or double" not in str(exc) and \
                    "float, double" not in str(exc):   # linalg's words
                failures.append(f"{name}: torch raised {exc}")
            continue
        got = ours_fn(*ours)
        if str(got.dtype) != str(want.dtype).replace("torch.", ""):
            failures.append(f"{name}: {got.dtype} vs {want.dtype}")
            continue
        if name == "matrix_exp_half":     # torch's half CPU kernel is far off (NaN, 1e30:
            continue                      # tests/conformance/skips.py); dtype compared only
        a, b = got.detach().float().numpy(), want.detach().float().numpy()
        tol = 2 * eps * max(1.0, float(np.nanmax(np.abs(b))) if b.size else 1.0)
        if not np.allclose(a, b, rtol=2 * eps, atol=tol, equal_nan=True):
            failures.append(f"{name}: max |diff| {np.nanmax(np.abs(a - b)):.3g}")
    assert not failures, failures
