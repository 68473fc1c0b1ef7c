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

# ------------------------------------------------------------------ the ops
# inputs: ("f", shape) float32, ("h", shape) in the autocast dtype, ("i", shape, high) int64,
# ("m", shape) bool, ("p", shape) in (0, 1), ("pos", shape) positive float32
OPS = {
    "add": (lambda a, b: a + b, lambda a, b: a + b, [("f", (3, 4)), ("f", (4,))]),
    "add_mixed": (lambda a, b: a + b, lambda a, b: a + b, [("h", (3, 4)), ("f", (4,))]),
    "sub": (lambda a, b: a - b, lambda a, b: a - b, [("f", (3, 4)), ("h", (3, 4))]),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, [("h", (3, 4)), ("h", (3, 4))]),
    "div": (lambda a, b: a / b, lambda a, b: a / b, [("f", (3, 4)), ("pos", (3, 4))]),
    "neg": (lambda x: -x, lambda x: -x, [("h", (3,))]),
    "pow": (lambda x: x ** 2, lambda x: x ** 2, [("h", (3,))]),
    "pow_tensor": (lambda x, y: x ** y, lambda x, y: x ** y, [("pos", (3,)), ("h", (3,))]),
    "exp": (ta.exp, torch.exp, [("h", (3,))]),
    "log": (ta.log, torch.log, [("pos", (3,))]),
    "log_half": (ta.log, torch.log, [("h", (3,))]),
    "log2": (ta.log2, torch.log2, [("h", (3,))]),
    "sqrt": (ta.sqrt, torch.sqrt, [("pos", (3,))]),
    "tanh": (ta.tanh, torch.tanh, [("h", (3,))]),
    "relu": (F.relu, tF.relu, [("h", (3,))]),
    "gelu": (F.gelu, tF.gelu, [("f", (3,))]),
    "clone": (ta.clone, torch.clone, [("h", (3,))]),
    "clamp": (lambda x: x.clamp(-1, 1), lambda x: x.clamp(-1, 1), [("h", (3,))]),
    "to": (lambda x: x.to("float64"), lambda x: x.to(torch.float64), [("h", (3,))]),
    "reshape": (lambda x: x.reshape(6), lambda x: x.reshape(6), [("h", (2, 3))]),
    "permute": (lambda x: x.permute(1, 0), lambda x: x.permute(1, 0), [("h", (2, 3))]),
    "getitem": (lambda x: x[0], lambda x: x[0], [("h", (2, 3))]),
    "cat": (lambda a, b: ta.cat([a, b]), lambda a, b: torch.cat([a, b]),
            [("h", (2, 3)), ("f", (1, 3))]),
    "stack": (lambda a, b: ta.stack([a, b]), lambda a, b: torch.stack([a, b]),
              [("f", (3,)), ("h", (3,))]),
    "expand": (lambda x: x.expand(2, 3), lambda x: x.expand(2, 3), [("h", (1, 3))]),
    "repeat": (lambda x: x.repeat(2, 1), lambda x: x.repeat(2, 1), [("h", (1, 3))]),
    "flip": (lambda x: x.flip(0), lambda x: x.flip(0), [("h", (3,))]),
    "tril": (ta.tril, torch.tril, [("h", (3, 3))]),
    "sigmoid": (ta.sigmoid, torch.sigmoid, [("h", (3,))]),
    "abs": (ta.abs, torch.abs, [("h", (3,))]),
    "rsqrt": (ta.rsqrt, torch.rsqrt, [("h", (3,))]),
    "leaky_relu": (F.leaky_relu, tF.leaky_relu, [("h", (3,))]),
    "silu": (F.silu, tF.silu, [("h", (3,))]),
    "softplus": (F.softplus, tF.softplus, [("h", (3,))]),
    "sum": (lambda x: x.sum(), lambda x: x.sum(), [("h", (3, 4))]),
    "mean": (lambda x: x.mean(), lambda x: x.mean(), [("h", (3, 4))]),
    "amax": (lambda x: x.amax(0), lambda x: x.amax(0), [("h", (3, 4))]),
    "amin": (lambda x: x.amin(0), lambda x: x.amin(0), [("h", (3, 4))]),
    "prod": (lambda x: x.prod(), lambda x: x.prod(), [("h", (3,))]),
    "prod_f32": (lambda x: x.prod(), lambda x: x.prod(), [("f", (3,))]),
    "cumsum": (lambda x: x.cumsum(0), lambda x: x.cumsum(0), [("h", (3,))]),
    "cumprod": (lambda x: x.cumprod(0), lambda x: x.cumprod(0), [("h", (3,))]),
    "var": (lambda x: x.var(), lambda x: x.var(), [("h", (3, 4))]),
    "std": (lambda x: x.std(), lambda x: x.std(), [("h", (3, 4))]),
    "logsumexp": (lambda x: ta.logsumexp(x, 0), lambda x: torch.logsumexp(x, 0),
                  [("h", (3,))]),
    "norm": (lambda x: x.norm(), lambda x: x.norm(), [("h", (3,))]),
    "logsigmoid": (F.logsigmoid, tF.logsigmoid, [("h", (3,))]),
    "elu": (F.elu, tF.elu, [("h", (3,))]),
    "hardtanh": (F.hardtanh, tF.hardtanh, [("h", (3,))]),
    "softsign": (F.softsign, tF.softsign, [("h", (3,))]),
    "masked_fill": (lambda x, m: x.masked_fill(m, 0.5), lambda x, m: x.masked_fill(m, 0.5),
                    [("h", (3,)), ("m", (3,))]),
    "where": (lambda m, a, b: ta.where(m, a, b), lambda m, a, b: torch.where(m, a, b),
              [("m", (3,)), ("h", (3,)), ("f", (3,))]),
    "matmul": (ta.matmul, torch.matmul, [("f", (2, 3)), ("f", (3, 4))]),
    "matmul_f64": (ta.matmul, torch.matmul, [("d", (2, 3)), ("d", (3, 4))]),
    "mm": (ta.mm, torch.mm, [("f", (2, 3)), ("h", (3, 4))]),
    "bmm": (ta.bmm, torch.bmm, [("f", (2, 2, 3)), ("f", (2, 3, 4))]),
    "addmm": (ta.addmm, torch.addmm, [("f", (4,)), ("f", (2, 3)), ("f", (3, 4))]),
    "linear": (F.linear, tF.linear, [("f", (2, 3)), ("f", (4, 3)), ("f", (4,))]),
    "linear_no_bias": (F.linear, tF.linear, [("f", (2, 3)), ("f", (4, 3))]),
    "einsum": (lambda a, b: ta.einsum("ij,jk->ik", a, b),
               lambda a, b: torch.einsum("ij,jk->ik", a, b), [("f", (2, 3)), ("f", (3, 4))]),
    "dot": (ta.dot, torch.dot, [("f", (3,)), ("f", (3,))]),
    "mv": (ta.mv, torch.mv, [("f", (2, 3)), ("f", (3,))]),
    "outer": (ta.outer, torch.outer, [("f", (2,)), ("f", (3,))]),
    "softmax": (lambda x: F.softmax(x, -1), lambda x: tF.softmax(x, -1), [("h", (2, 3))]),
    "log_softmax": (lambda x: F.log_softmax(x, -1), lambda x: tF.log_softmax(x, -1),
                    [("h", (2, 3))]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (3,), w, b),
                   lambda x, w, b: tF.layer_norm(x, (3,), w, b),
                   [("h", (2, 3)), ("f", (3,)), ("f", (3,))]),
    "layer_norm_f32": (lambda x, w, b: F.layer_norm(x, (3,), w, b),
                       lambda x, w, b: tF.layer_norm(x, (3,), w, b),
                       [("f", (2, 3)), ("f", (3,)), ("f", (3,))]),
    "rms_norm": (lambda x, w: F.rms_norm(x, (3,), w), lambda x, w: tF.rms_norm(x, (3,), w),
                 [("h", (2, 3)), ("f", (3,))]),
    "batch_norm": (lambda x, m, v: F.batch_norm(x, m, v), lambda x, m, v: tF.batch_norm(x, m, v),
                   [("h", (4, 3)), ("r", (3,)), ("rpos", (3,))]),
    "embedding": (F.embedding, tF.embedding, [("i", (2, 3), 5), ("f", (5, 4))]),
    "cross_entropy": (F.cross_entropy, tF.cross_entropy, [("h", (4, 5)), ("i", (4,), 5)]),
    "nll_loss": (F.nll_loss, tF.nll_loss, [("h", (4, 5)), ("i", (4,), 5)]),
    "mse_loss": (F.mse_loss, tF.mse_loss, [("h", (4,)), ("h", (4,))]),
    "l1_loss": (F.l1_loss, tF.l1_loss, [("h", (4,)), ("h", (4,))]),
    "smooth_l1_loss": (F.smooth_l1_loss, tF.smooth_l1_loss, [("h", (4,)), ("h", (4,))]),
    "huber_loss": (F.huber_loss, tF.huber_loss, [("h", (4,)), ("h", (4,))]),
    "kl_div": (lambda a, b: F.kl_div(a, b, reduction="batchmean"),
               lambda a, b: tF.kl_div(a, b, reduction="batchmean"),
               [("h", (2, 3)), ("p", (2, 3))]),
    "bce_with_logits": (F.binary_cross_entropy_with_logits,
                        tF.binary_cross_entropy_with_logits, [("h", (4,)), ("p", (4,))]),
    "bce": (F.binary_cross_entropy, tF.binary_cross_entropy, [("hp", (4,)), ("p", (4,))]),
    "sdpa": (F.scaled_dot_product_attention, tF.scaled_dot_product_attention,
             [("f", (1, 2, 3, 4)), ("f", (1, 2, 3, 4)), ("f", (1, 2, 3, 4))]),
    "sdpa_causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    lambda q, k, v: tF.scaled_dot_product_attention(q, k, v, is_causal=True),
                    [("f", (1, 3, 4)), ("h", (1, 3, 4)), ("f", (1, 3, 4))]),
    "dropout": (lambda x: F.dropout(x, 0.5), lambda x: tF.dropout(x, 0.5), [("h", (3,))]),
    "maximum": (ta.maximum, torch.maximum, [("h", (3,)), ("h", (3,))]),
    "minimum": (ta.minimum, torch.minimum, [("h", (3,)), ("h", (3,))]),
    "gather": (lambda x, i: ta.gather(x, 1, i), lambda x, i: torch.gather(x, 1, i),
               [("h", (2, 3)), ("i", (2, 2), 3)]),
    "scatter": (lambda x, i, s: ta.scatter(x, 0, i, s), lambda x, i, s: torch.scatter(x, 0, i, s),
                [("h", (3, 4)), ("distinct", (2, 4), 3), ("h", (2, 4))]),
    "scatter_add": (lambda x, i, s: ta.scatter_add(x, 0, i, s),
                    lambda x, i, s: torch.scatter_add(x, 0, i, s),
                    [("h", (3, 4)), ("i", (2, 4), 3), ("h", (2, 4))]),
    "index_add": (lambda x, i, s: ta.index_add(x, 0, i, s),
                  lambda x, i, s: torch.index_add(x, 0, i, s),
                  [("h", (3, 4)), ("i", (2,), 3), ("h", (2, 4))]),
    "pad": (lambda x: F.pad(x, (1, 1)), lambda x: tF.pad(x, (1, 1)), [("h", (2, 3))]),
    "roll": (lambda x: ta.roll(x, 1, 0), lambda x: torch.roll(x, 1, 0), [("h", (3,))]),
    "diagonal": (ta.diagonal, torch.diagonal, [("h", (3, 3))]),
    "diag": (lambda v: ta.diag(v, -1), lambda v: torch.diag(v, -1), [("h", (3,))]),
    "repeat_interleave": (lambda x: x.repeat_interleave(2), lambda x: x.repeat_interleave(2),
                          [("h", (3,))]),
    "remainder": (lambda a, b: a % b, lambda a, b: a % b, [("h", (3,)), ("pos", (3,))]),
    "fmod": (ta.fmod, torch.fmod, [("h", (3,)), ("h", (3,))]),
    "floor_divide": (ta.floor_divide, torch.floor_divide, [("h", (3,)), ("hpos", (3,))]),
    "square": (ta.square, torch.square, [("h", (3,))]),
    "reciprocal": (ta.reciprocal, torch.reciprocal, [("h", (3,))]),
    "log1p": (ta.log1p, torch.log1p, [("hp", (3,))]),
    "expm1": (ta.expm1, torch.expm1, [("h", (3,))]),
    "floor": (ta.floor, torch.floor, [("h", (3,))]),
    "nan_to_num": (ta.nan_to_num, torch.nan_to_num, [("h", (3,))]),
    "sin": (ta.sin, torch.sin, [("h", (3,))]),
    "cos": (ta.cos, torch.cos, [("h", (3,))]),
    "lerp": (lambda a, b: ta.lerp(a, b, 0.3), lambda a, b: torch.lerp(a, b, 0.3),
             [("h", (3,)), ("h", (3,))]),
    "normalize": (F.normalize, tF.normalize, [("h", (2, 3))]),
    "cosine_similarity": (F.cosine_similarity, tF.cosine_similarity,
                          [("h", (2, 3)), ("h", (2, 3))]),
    "setitem": (lambda x, v: _setitem(x, v), lambda x, v: _setitem(x, v),
                [("h", (3,)), ("f", ())]),
}


def _setitem(x, v):
    y = x * 1
    y[0] = v
    return y


def _arrays(spec, rng):
    out = []
    for item in spec:
        kind, shape = item[0], item[1]
        if kind == "i":
            out.append(("i", rng.integers(0, item[2], size=shape)))
        elif kind == "distinct":         # distinct rows in each column
            columns = [rng.permutation(item[2])[:shape[0]] for _ in range(shape[1])]
            out.append(("i", np.stack(columns, axis=1)))
        elif kind == "m":
            out.append(("m", rng.random(shape) > 0.5))
        elif kind in ("p", "hp"):
            out.append((kind[0], rng.uniform(0.1, 0.9, size=shape).astype(np.float32)))
        elif kind in ("pos", "hpos", "rpos"):
            out.append((kind[0] if kind != "rpos" else "r",
                        rng.uniform(0.5, 2.0, size=shape).astype(np.float32)))
        else:
            out.append((kind, rng.standard_normal(shape).astype(np.float32)))
    return out


def _inputs(spec, low_name):
    """The same numbers as tinyattn and torch tensors; "h" inputs in the autocast dtype."""
    ours, theirs = [], []
    for (kind, array), item in zip(_arrays(spec, np.random.default_rng(0)), spec):
        t = torch.tensor(array)
        x = ta.tensor(array)
        if item[0] in ("h", "hp", "hpos"):
            t, x = t.to(getattr(torch, low_name)), x.to(low_name)
        elif item[0] == "d":
            t, x = t.double(), x.double()
        if kind not in ("i", "m", "r"):   # "r": running statistics, no gradient
            t.requires_grad_(True)
            x.requires_grad_(True)
        ours.append(x)
        theirs.append(t)
    return ours, theirs


def _name(dtype):
    return str(dtype).replace("torch.", "")


@pytest.mark.parametrize("low_name", ["bfloat16", "float16"])
def test_every_op_has_torchs_output_dtype_inside_cpu_autocast(low_name):
    seen = set()
    recorder = _record_classes(seen)
    failures = []
    for name, (ours_fn, theirs_fn, spec) in OPS.items():
        ours, theirs = _inputs(spec, low_name)
        with torch.autocast("cpu", dtype=getattr(torch, low_name)):
            want = _name(theirs_fn(*theirs).dtype)
        with ta.autocast("cpu", dtype=low_name), recorder:
            got = ours_fn(*ours)
        if _name(got.dtype) != want:
            failures.append(f"{name}: tinyattn {got.dtype}, torch {want}")
    assert not failures, failures
    assert _function_classes() - seen - _NOT_REACHABLE == set(), "ops left untested"


_NOT_REACHABLE = {  # Function classes with no torch equivalent to compare in this table
    "_PyTorchStyleNode", "TiledAttention", "PackedSelfAttention", "Rope", "Triangle",
    "Step"}


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
        self.previous = autograd.dispatch_hook
        inner = dispatch._hook

        def hook(cls, inputs, options):
            self.seen.add(cls.__name__)
            return inner(cls, inputs, options)
        autograd.dispatch_hook = hook

    def __exit__(self, *exc):
        autograd.dispatch_hook = self.previous


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
                "sdpa", "sdpa_causal", "einsum"}
CUDA_FLOAT32 = {"pow", "pow_tensor", "exp", "log", "log_half", "log2", "softplus", "sum",
                "prod", "prod_f32", "cumsum", "cumprod", "norm", "rsqrt", "softmax",
                "log_softmax", "layer_norm", "layer_norm_f32", "cross_entropy", "nll_loss",
                "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
                "bce_with_logits", "bce", "reciprocal", "log1p", "expm1"}


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
            ours, _ = _inputs(spec, "float16")
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


def test_float32_programs_run_without_the_hook():
    """The cost when autocast is off and no half tensor exists: one global check per op."""
    import subprocess
    import sys
    code = ("import tinyattn as ta; from tinyattn import autograd\n"
            "x = ta.randn(3, 3, requires_grad=True); (x @ x).sum().backward()\n"
            "assert autograd.dispatch_hook is None\n"
            "with ta.autocast('cpu'): assert autograd.dispatch_hook is not None\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "ok", out.stderr
