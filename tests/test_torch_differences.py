"""Issue 30: the rows that left docs/pytorch.md's table "What differs on purpose" because
tinyattn now does what torch 2.13 does. Each test compares with torch (the oracle) and failed
before its fix; the negative controls show the comparison can fail."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

torch = pytest.importorskip("torch", reason="torch is the reference for these tests")


def _same(ours, theirs, **tol):
    np.testing.assert_allclose(np.asarray(ours.detach().numpy()),
                               theirs.detach().numpy(), **(tol or dict(rtol=1e-6, atol=1e-7)))


# ------------------------------------------------------------------ 1. BatchNorm, empty batch
@pytest.mark.parametrize("shape", [(0, 3), (0, 3, 4), (2, 3, 0), (0, 3, 2, 2), (2, 3, 0, 2)])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_of_an_empty_batch_in_training_is_torchs(shape, momentum):
    kind = "BatchNorm2d" if len(shape) == 4 else "BatchNorm1d"
    theirs = getattr(torch.nn, kind)(3, momentum=momentum)
    ours = getattr(nn, kind)(3, momentum=momentum)
    with torch.no_grad():
        theirs.weight.normal_(), theirs.bias.normal_()
        theirs.running_mean.normal_(), theirs.running_var.uniform_(1, 2)
    ours.load_state_dict(theirs.state_dict())
    xt = torch.zeros(shape, requires_grad=True)
    xo = ta.zeros(*shape, requires_grad=True)
    yt, yo = theirs(xt), ours(xo)                # tinyattn refused: "more than 1 value"
    assert tuple(yo.shape) == tuple(yt.shape) and yo.dtype == np.float32
    (yt.sum() * 1).backward()
    (yo.sum() * 1).backward()
    assert tuple(xo.grad.shape) == shape
    for name in ("weight", "bias"):
        _same(getattr(ours, name).grad, getattr(theirs, name).grad)    # zeros, not None
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        _same(getattr(ours, name), getattr(theirs, name))               # untouched; count + 1
    assert int(ours.num_batches_tracked.item()) == 1


def test_batch_norm_empty_batch_functional_and_the_batch_of_one_still_refused():
    out = F.batch_norm(ta.zeros(0, 3), ta.zeros(3), ta.ones(3), training=True)
    assert tuple(out.shape) == (0, 3)
    for shape in [(1, 3), (1, 3, 1)]:          # negative control: one value is refused, as torch
        with pytest.raises(ValueError, match="more than 1 value per channel"):
            torch.nn.BatchNorm1d(3)(torch.zeros(shape))
        with pytest.raises(ValueError, match="more than 1 value per channel"):
            nn.BatchNorm1d(3)(ta.zeros(*shape))


# ------------------------------------------------------------------ 2. unique requires grad
_UNIQUE_CALLS = {
    "unique": lambda m, x: m.unique(x),
    "unique inverse counts": lambda m, x: m.unique(x, return_inverse=True, return_counts=True),
    "Tensor.unique unsorted": lambda m, x: x.unique(sorted=False),
    "unique dim": lambda m, x: m.unique(x, dim=0),
    "unique_consecutive": lambda m, x: m.unique_consecutive(x, return_counts=True),
}


@pytest.mark.parametrize("call", list(_UNIQUE_CALLS))
def test_unique_of_a_tensor_that_requires_grad_is_marked_and_refuses_backward(call):
    results = []
    for module in (torch, ta):
        x = module.tensor([3.0, 1.0, 3.0, 2.0], requires_grad=True)
        out = _UNIQUE_CALLS[call](module, x)
        outs = out if isinstance(out, tuple) else (out,)
        flags = [o.requires_grad for o in outs]
        with pytest.raises(NotImplementedError) as info:
            (outs[0].sum() + x.sum()).backward()
        results.append((flags, type(outs[0].grad_fn).__name__ if module is torch else
                        outs[0].grad_fn.name(), str(info.value)))
        with module.no_grad():                     # negative control: nothing recorded
            out = _UNIQUE_CALLS[call](module, x)
        assert not (out if isinstance(out, tuple) else (out,))[0].requires_grad
    assert results[0] == results[1]
    assert results[0][0][0] is True


# ------------------------------------------------------------------ 5. .data writes
def _data_write_gradient(module, write):
    a = module.tensor([0.5, 1.0, 2.0], requires_grad=True)
    b = a.exp()                                    # Exp saves its output for backward
    loss = (b * b).sum()                           # Mul saves b
    write(b.data)
    loss.backward()
    return a.grad.numpy(), b._version


@pytest.mark.parametrize("write", [lambda d: d.__setitem__(0, 5.0), lambda d: d.fill_(0.0)
                                   if hasattr(d, "fill_") else d.fill(0.0)])
def test_a_data_write_while_backward_is_pending_lands_as_in_torch(write):
    ours, our_version = _data_write_gradient(ta, write)     # was SavedDataWriteError
    theirs, their_version = _data_write_gradient(torch, write)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    assert our_version == their_version == 0                # not counted, as torch
    untouched, _ = _data_write_gradient(torch, lambda d: None)
    assert not np.allclose(untouched, theirs)               # negative control: it mattered


def test_anomaly_mode_refuses_the_write_with_advice():
    a = ta.tensor([0.5, 1.0], requires_grad=True)
    b = a.exp()
    with ta.autograd.detect_anomaly():
        with pytest.raises(ta.SavedDataWriteError, match="anomaly mode.*saved for the backward"):
            b.data[0] = 5.0
    b.data[0] = 5.0                                          # outside it: torch's behaviour


# ------------------------------------------------------------------ 6. optimizer constructors
_OPTIMIZERS = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam"]
_OPTIONS = {
    "lr=inf": lambda m: dict(lr=float("inf")),
    "lr=nan": lambda m: dict(lr=float("nan")),
    "lr=-1": lambda m: dict(lr=-1.0),
    "0-d tensor lr": lambda m: dict(lr=m.tensor(0.001)),
    "1-element tensor lr": lambda m: dict(lr=m.tensor([0.001])),
    "tensor lr with foreach": lambda m: dict(lr=m.tensor(0.001), foreach=True),
    "foreach": lambda m: dict(lr=0.1, foreach=True),
    "fused": lambda m: dict(lr=0.1, fused=True),
    "fused and foreach": lambda m: dict(lr=0.1, fused=True, foreach=True),
    "capturable": lambda m: dict(lr=0.1, capturable=True),
    "differentiable": lambda m: dict(lr=0.1, differentiable=True),
}


def _optimizer_outcome(module, name, option):
    """'ok' and the parameters after two steps, or the error's type."""
    p = module.nn.Parameter(module.tensor([1.0, -2.0]))
    try:
        opt = getattr(module.optim, name)([p], **_OPTIONS[option](module))
        for _ in range(2):
            p.grad = module.tensor([0.5, 0.25])
            opt.step()
    except Exception as exc:                  # noqa: BLE001 - the type is what is compared
        return type(exc).__name__, None
    return "ok", p.detach().numpy().copy()


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("option", list(_OPTIONS))
@pytest.mark.parametrize("name", _OPTIMIZERS)
def test_optimizer_constructor_options_as_torch(name, option):
    theirs, their_values = _optimizer_outcome(torch, name, option)
    ours, our_values = _optimizer_outcome(ta, name, option)
    assert ours == theirs, (name, option, ours, theirs)
    if ours == "ok":
        np.testing.assert_allclose(our_values, their_values, rtol=1e-5, equal_nan=True)


def test_a_tensor_lr_is_kept_in_the_group_and_a_scheduler_still_works():
    lr = ta.tensor(0.5)
    p = ta.nn.Parameter(ta.tensor([1.0]))
    opt = ta.optim.SGD([p], lr=lr)
    assert opt.param_groups[0]["lr"] is lr
    with pytest.raises(ValueError, match="one element"):   # negative control
        ta.optim.SGD([p], lr=ta.tensor([0.1, 0.2]))
    p.grad = ta.tensor([1.0])
    opt.step()
    assert p.item() == 0.5


# ------------------------------------------------------------------ 7. scatter_reduce ties
_TIE_CASES = [  # self, src, index: self equal to the result, ties in src, both, neither
    ([5.0, 0.0, 7.0], [5.0, 5.0, 3.0], [0, 0, 1]),
    ([1.0, 0.0, 7.0], [5.0, 5.0, 3.0], [0, 0, 1]),
    ([9.0, 0.0, 7.0], [5.0, 5.0, 3.0], [0, 0, 1]),
    ([5.0, 0.0, 7.0], [5.0, 4.0, 3.0], [0, 0, 1]),
    ([1.0, 3.0, 7.0], [1.0, 1.0, 3.0], [0, 0, 1]),
]


@pytest.mark.parametrize("include_self", [False, True])
@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("case", range(len(_TIE_CASES)))
def test_scatter_reduce_amax_amin_gradient_at_ties_is_torchs(case, reduce, include_self):
    grads = []
    for module in (torch, ta):
        selfv, src, index = _TIE_CASES[case]
        x = module.tensor(selfv, dtype=module.float64, requires_grad=True)
        s = module.tensor(src, dtype=module.float64, requires_grad=True)
        out = x.scatter_reduce(0, module.tensor(index), s, reduce, include_self=include_self)
        out.backward(module.tensor([1.0, 10.0, 100.0], dtype=module.float64))
        grads.append((out.tolist(), x.grad.tolist(), s.grad.tolist()))
    assert grads[1] == grads[0]


# ------------------------------------------------------------------ 4. MHA, all-masked query
def _mha_pair(heads=2, **kwargs):
    theirs = torch.nn.MultiheadAttention(4, heads, **kwargs)
    ours = nn.MultiheadAttention(4, heads, **kwargs)
    ours.load_state_dict({k: ta.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("mask", ["key_padding_mask", "attn_mask"])
@pytest.mark.parametrize("mode", ["train", "eval", "eval no_grad", "eval no_grad cross",
                                  "eval no_grad odd heads", "eval no_grad seq first"])
def test_multihead_attention_all_masked_query_matches_torch_on_every_path(mode, mask,
                                                                            need_weights):
    torch.manual_seed(0)
    seq_first = "seq first" in mode                      # (L, N, E): torch's slow path
    ours, theirs = _mha_pair(1 if "odd" in mode else 2, batch_first=not seq_first)
    for module in (ours, theirs):
        module.train(mode == "train")
    x_np = torch.randn(2, 3, 4).numpy()
    padded = np.array([[False, False, False], [True, True, True]])
    banned = np.zeros((3, 3), dtype=bool)
    banned[1] = True
    outputs = []
    for lib, module in ((torch, theirs), (ta, ours)):
        x = lib.tensor(x_np.transpose(1, 0, 2).copy() if seq_first else x_np)
        y = lib.tensor(x.numpy() + 1.0) if "cross" in mode else x
        masks = ({"key_padding_mask": lib.tensor(padded)} if mask == "key_padding_mask"
                 else {"attn_mask": lib.tensor(banned)})
        with lib.set_grad_enabled("no_grad" not in mode):
            out, weights = module(x, y, y, need_weights=need_weights, **masks)
        out = out.transpose(0, 1) if seq_first else out
        outputs.append((out.detach().numpy(),
                        None if weights is None else weights.detach().numpy()))
    (theirs_out, theirs_w), (ours_out, ours_w) = outputs
    np.testing.assert_allclose(ours_out, theirs_out, rtol=1e-5, atol=1e-6, equal_nan=True)
    assert np.isnan(ours_out).any() == np.isnan(theirs_out).any()
    if need_weights:
        np.testing.assert_allclose(ours_w, theirs_w, rtol=1e-5, atol=1e-6, equal_nan=True)
    else:
        assert ours_w is None and theirs_w is None


def test_tinyattns_own_multi_head_attention_keeps_zeros_for_an_all_masked_query():
    """nn.MultiHeadAttention (capital H) is tinyattn's, not a torch name: no NaN rows."""
    mha = nn.MultiHeadAttention(4, 2).eval()
    x = ta.randn(1, 3, 4)
    mask = ta.tensor([[[True, True, True], [False, False, False], [True, True, True]]])
    with ta.no_grad():
        out = mha(x, mask=mask)
    out = out[0] if isinstance(out, tuple) else out
    assert not np.isnan(out.numpy()).any()


# ------------------------------------------------------------------ 3. GELU's far tail
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("length", [1, 64])
def test_gelu_finite_tail_agrees_with_torch_within_its_tolerance(dtype, approximate, length):
    x = np.repeat(np.array([-20.0, -12.0, -10.0, -8.0, -5.0, -1e-3, 0.0, 3.0, 50.0]), length)
    ours = F.gelu(ta.tensor(x, dtype=dtype), approximate=approximate)
    theirs = torch.nn.functional.gelu(torch.tensor(x, dtype=getattr(torch, dtype)),
                                      approximate=approximate)
    torch.testing.assert_close(torch.from_numpy(ours.numpy()), theirs)
    with pytest.raises(AssertionError):                      # negative control
        torch.testing.assert_close(torch.from_numpy(ours.numpy()) + 1e-3, theirs)


def test_gelu_at_infinities_follows_the_math_where_torch_has_its_documented_bug():
    """pytorch/pytorch#185770: float32 gelu(-inf) (and +inf on the vectorised path) is NaN in
    torch 2.13; tinyattn gives the limits. float64 keeps torch's NaN at -inf."""
    out = F.gelu(ta.tensor([float("inf"), -float("inf")] * 20)).numpy()
    assert out[0] == np.inf and out[1] == 0.0
    out64 = F.gelu(ta.tensor([float("inf"), -float("inf")], dtype="float64")).numpy()
    ref64 = torch.nn.functional.gelu(torch.tensor([float("inf"), -float("inf")],
                                                  dtype=torch.float64)).numpy()
    np.testing.assert_array_equal(out64, ref64)


# ------------------------------------------------------------------ 10. safetensors.torch
_SAFETENSORS_SCRIPT = """
import sys
import torch
from safetensors.torch import save_file, load_file, save, load
w = torch.tensor([1.5, -2.25], dtype=torch.bfloat16)
save_file({"w": w, "f": torch.ones(2, 3)}, sys.argv[1])
back = load_file(sys.argv[1])
print(back["w"].dtype, back["w"].tolist(), back["f"].dtype, tuple(back["f"].shape))
print(load(save({"w": w}))["w"].dtype)
"""


def test_safetensors_torch_under_run_torch_keeps_bfloat16_as_torch(tmp_path):
    pytest.importorskip("safetensors", reason="the script imports safetensors.torch")
    import os
    import subprocess
    import sys
    script = tmp_path / "st.py"
    script.write_text(_SAFETENSORS_SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.abspath(ta.__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    outputs = []
    for runner in ([sys.executable], [sys.executable, "-m", "tinyattn", "run-torch"]):
        result = subprocess.run(runner + [str(script), str(tmp_path / "w.safetensors")],
                                capture_output=True, text=True, timeout=300, env=env)
        assert result.returncode == 0, result.stderr     # was: no torch.complex64
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]
    assert "torch.bfloat16 [1.5, -2.25] torch.float32 (2, 3)" in outputs[1]


# ------------------------------------------------------------------ 8. saving a lazy module
def _lazy_round_trip(module, path):
    module.save(module.nn.LazyLinear(3).state_dict(), path)
    outcome = {}
    for weights_only in (True, False):
        try:
            state = module.load(path, weights_only=weights_only)
            outcome[weights_only] = {k: type(v).__name__ for k, v in state.items()}
        except Exception as exc:              # noqa: BLE001 - the type is what is compared
            outcome[weights_only] = type(exc).__name__
    fresh = module.nn.LazyLinear(3)
    fresh.load_state_dict(module.load(path, weights_only=False))   # both lazy: stays lazy
    fresh(module.ones(2, 4))
    outcome["after forward"] = tuple(fresh.weight.shape)
    return outcome


@pytest.mark.filterwarnings("ignore")
def test_saving_a_lazy_modules_state_before_its_first_forward_is_torchs(tmp_path):
    theirs = _lazy_round_trip(torch, str(tmp_path / "torch.pt"))
    ours = _lazy_round_trip(ta, str(tmp_path / "ours.pt"))      # was: RuntimeError on save
    assert ours == theirs
    assert theirs[True] == "UnpicklingError"                     # weights_only refuses, as torch
    loaded = torch.load(str(tmp_path / "ours.pt"), weights_only=False)   # torch reads ours
    assert type(loaded["weight"]).__name__ == "UninitializedParameter"
    with pytest.raises(RuntimeError, match="uninitialized"):    # negative control
        nn.Linear(4, 3).load_state_dict(ta.load(str(tmp_path / "ours.pt"), weights_only=False))
