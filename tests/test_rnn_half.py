"""Recurrent layers and cells in float16 and bfloat16 against torch's CPU modules: the same
weights and inputs give torch's output dtype, and outputs, final states and gradients (input,
h0, every weight) as accurate as torch's, both measured against the same module in float64
(elementwise equality with torch is not the bar: each library rounds the steps' sums in its
own order, and over several steps that moves some entries by a few units in the last place).
torch's CPU runs these modules in half dtypes; autocast's choices for them are tested in
test_amp_autocast.py."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="torch's CPU modules are the oracle")

DTYPES = ["float16", "bfloat16"]
LAYERS = [("RNN", {}), ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
          ("LSTM", {}), ("LSTM", {"num_layers": 2, "bidirectional": True}),
          ("LSTM", {"proj_size": 2}), ("GRU", {}), ("GRU", {"bidirectional": True}),
          ("GRU", {"batch_first": True})]
CELLS = ["RNNCell", "LSTMCell", "GRUCell"]
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}    # one unit in the last place at 1


def _pair(name: str, kwargs: dict, dtype: str):
    """torch's module in ``dtype``, the same in float64 (the truth), and tinyattn's."""
    torch.manual_seed(0)
    reference = getattr(torch.nn, name)(5, 4, **kwargs).to(getattr(torch, dtype))
    truth = getattr(torch.nn, name)(5, 4, **kwargs).double()
    truth.load_state_dict({k: v.double() for k, v in reference.state_dict().items()})
    ours = getattr(ta.nn, name)(5, 4, **kwargs)
    ours.load_state_dict({k: ta.tensor(v.float().numpy())
                          for k, v in reference.state_dict().items()})
    return reference, truth, ours.to(getattr(ta, dtype))


def _inputs(shape, dtype: str, seed: int = 1):
    """The same values (representable in ``dtype``) for torch, the float64 truth, tinyattn."""
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    ref = torch.tensor(values).to(getattr(torch, dtype))
    truth = ref.double().requires_grad_(True)
    mine = ta.tensor(values).to(getattr(ta, dtype)).requires_grad_(True)
    return ref.requires_grad_(True), truth, mine


def _as_accurate(mine, ref, truth, what: str, dtype: str) -> None:
    """torch's dtype, and tinyattn's error against float64 at most twice torch's plus one
    unit in the last place of the largest value: the two round the steps' sums in their own
    order, so elementwise equality with torch is not the bar; being as accurate is."""
    assert str(mine.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], (
        f"{what}: dtype {mine.dtype}, torch gives {ref.dtype}")
    exact = truth.detach().numpy()
    ours = np.abs(mine.float().detach().numpy() - exact).max()
    theirs = np.abs(ref.float().detach().numpy() - exact).max()
    bound = 2 * theirs + EPS[dtype] * np.abs(exact).max()
    assert ours <= bound, (f"{what}: tinyattn's error {ours:.3g} against float64, torch's "
                           f"{theirs:.3g} (bound {bound:.3g})")


def _flat(output):
    """output, h_n (and c_n) of a layer, in one list."""
    out, state = output
    return [out, *(state if isinstance(state, tuple) else (state,))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,kwargs", LAYERS, ids=lambda v: str(v))
def test_layer_in_half_matches_torch(name, kwargs, dtype):
    reference, truth, ours = _pair(name, kwargs, dtype)
    shape = (2, 6, 5) if kwargs.get("batch_first") else (6, 2, 5)
    x_ref, x_truth, x_mine = _inputs(shape, dtype)
    outs = [_flat(m(x)) for m, x in ((reference, x_ref), (truth, x_truth), (ours, x_mine))]
    for i, (ref, exact, mine) in enumerate(zip(*outs)):
        _as_accurate(mine, ref, exact, f"{name}{kwargs} {dtype} output {i}", dtype)
    weights = np.random.default_rng(2).standard_normal(tuple(outs[0][0].shape))
    for out, wrap in ((outs[0][0], torch.tensor), (outs[1][0], torch.tensor),
                      (outs[2][0], ta.tensor)):
        (out.double() * wrap(weights)).sum().backward()
    _as_accurate(x_mine.grad, x_ref.grad, x_truth.grad, f"{name} {dtype} input grad", dtype)
    for (key, p_ref), p_truth, p_mine in zip(reference.named_parameters(), truth.parameters(),
                                             ours.parameters()):
        _as_accurate(p_mine.grad, p_ref.grad, p_truth.grad, f"{name} {dtype} {key}.grad",
                     dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", CELLS)
def test_cell_in_half_matches_torch(name, dtype):
    reference, truth, ours = _pair(name, {}, dtype)
    xs, hs = _inputs((3, 5), dtype), _inputs((3, 4), dtype, seed=3)
    results = []
    for module, x, h in zip((reference, truth, ours), xs, hs):
        state = (h, h * 0.5) if name == "LSTMCell" else h
        out = module(x, state)
        out = out if isinstance(out, tuple) else (out,)
        sum(o.double().sum() for o in out).backward()
        results.append(out)
    for i, (ref, exact, mine) in enumerate(zip(*results)):
        _as_accurate(mine, ref, exact, f"{name} {dtype} output {i}", dtype)
    _as_accurate(xs[2].grad, xs[0].grad, xs[1].grad, f"{name} {dtype} input grad", dtype)
    _as_accurate(hs[2].grad, hs[0].grad, hs[1].grad, f"{name} {dtype} h grad", dtype)
    for (key, p_ref), p_truth, p_mine in zip(reference.named_parameters(), truth.parameters(),
                                             ours.parameters()):
        _as_accurate(p_mine.grad, p_ref.grad, p_truth.grad, f"{name} {dtype} {key}.grad",
                     dtype)


def test_negative_control_a_wrong_dtype_or_a_wrong_weight_is_caught():
    reference, truth, ours = _pair("GRU", {}, "float16")
    x_ref, x_truth, x_mine = _inputs((6, 2, 5), "float16")
    out_ref, exact = reference(x_ref)[0], truth(x_truth)[0]
    with pytest.raises(AssertionError, match="dtype"):
        _as_accurate(ours(x_mine)[0].float(), out_ref, exact, "cast", "float16")
    with ta.no_grad():
        ours.weight_hh_l0.mul_(1.01)                  # 1% off: far outside half's rounding
    with pytest.raises(AssertionError, match="error"):
        _as_accurate(ours(x_mine)[0], out_ref, exact, "scaled weights", "float16")
