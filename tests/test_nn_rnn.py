"""nn.RNN, nn.LSTM, nn.GRU and their cells against torch's modules from the same weights:
outputs, h_n/c_n and every gradient (parameters, input, h0, c0) to 1e-10 in float64, for
multi-layer, bidirectional, batch-first, projected, bias-free, packed (sorted and unsorted),
unbatched and empty-batch cases; state dicts both ways; init; repr; the errors torch raises.
Negative controls show the comparisons can fail."""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.gradcheck import gradcheck
from tinyattn.nn.utils import rnn as ta_rnn

torch = pytest.importorskip("torch", reason="the recurrent layers are compared with torch's")
R = torch.nn.utils.rnn
RNG = np.random.default_rng(32)
TOL = 1e-10


def _repr(module) -> str:
    """The module's printout without tinyattn's trailing parameter count ("  # 36 params")."""
    return repr(module).split("  # ")[0]


def _pair(kind: str, *args, **kwargs):
    """A torch module and ours in float64 with torch's weights loaded into ours."""
    theirs = getattr(torch.nn, kind)(*args, **kwargs).double()
    ours = getattr(nn, kind)(*args, **kwargs).double()
    result = ours.load_state_dict({name: ta.tensor(value.detach().numpy())
                                   for name, value in theirs.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    return theirs, ours


def _leaves(out):
    """Every tensor of an output structure, in order (PackedSequence -> its data)."""
    if isinstance(out, (R.PackedSequence, ta_rnn.PackedSequence)):
        return [out.data]
    if isinstance(out, (tuple, list)):
        return [leaf for item in out for leaf in _leaves(item)]
    return [out]


def _structure(out):
    if isinstance(out, (R.PackedSequence, ta_rnn.PackedSequence)):
        return "packed"
    if isinstance(out, (tuple, list)):
        return tuple(_structure(item) for item in out)
    return tuple(out.shape)


def _compare(theirs, ours, torch_inputs, our_inputs, call, tol=TOL):
    """Run both, compare the outputs, backprop the same random weighting of every output and
    compare every parameter's and input's gradient. Returns the largest difference."""
    t_out, o_out = call(theirs, *torch_inputs), call(ours, *our_inputs)
    assert _structure(t_out) == _structure(o_out)
    worst = 0.0
    t_leaves, o_leaves = _leaves(t_out), _leaves(o_out)
    for a, b in zip(t_leaves, o_leaves):
        assert b.dtype == ta.float64
        worst = max(worst, float(np.abs(a.detach().numpy() - b.numpy()).max(initial=0)))
    weights = [RNG.standard_normal(tuple(a.shape)) for a in t_leaves]
    sum((a * torch.tensor(w)).sum() for a, w in zip(t_leaves, weights)).backward()
    ta.stack([(b * ta.tensor(w)).sum() for b, w in zip(o_leaves, weights)]).sum().backward()
    for (name, p), (our_name, q) in zip(theirs.named_parameters(), ours.named_parameters()):
        assert name == our_name
        worst = max(worst, float(np.abs(p.grad.numpy() - q.grad.numpy()).max()))
    for a, b in zip(torch_inputs, our_inputs):
        for x, y in zip(_leaves(a), _leaves(b)):
            if x is not None and x.requires_grad:
                worst = max(worst, float(np.abs(x.grad.numpy() - y.grad.numpy()).max(
                    initial=0)))
    return worst


def _tensors(array):
    return torch.tensor(array, requires_grad=True), ta.tensor(array, requires_grad=True)


LAYER_CASES = [
    ("RNN", dict()),
    ("RNN", dict(nonlinearity="relu", num_layers=2)),
    ("RNN", dict(bidirectional=True, bias=False)),
    ("GRU", dict()),
    ("GRU", dict(num_layers=3, bidirectional=True)),
    ("GRU", dict(batch_first=True, bias=False)),
    ("LSTM", dict()),
    ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("LSTM", dict(proj_size=2)),
    ("LSTM", dict(proj_size=3, num_layers=2, bidirectional=True, bias=False)),
]


def _ids(case):
    kind, kwargs = case
    return kind + "-" + "-".join(f"{k}={v}" for k, v in kwargs.items())


def _hidden(kind, kwargs, batch, hidden=4, unbatched=False):
    directions = 2 if kwargs.get("bidirectional") else 1
    layers = kwargs.get("num_layers", 1) * directions
    h_size = kwargs.get("proj_size") or hidden
    shape_h = (layers, h_size) if unbatched else (layers, batch, h_size)
    shape_c = (layers, hidden) if unbatched else (layers, batch, hidden)
    h_t, h_o = _tensors(RNG.standard_normal(shape_h))
    if kind != "LSTM":
        return h_t, h_o
    c_t, c_o = _tensors(RNG.standard_normal(shape_c))
    return (h_t, c_t), (h_o, c_o)


@pytest.mark.parametrize("case", LAYER_CASES, ids=_ids)
@pytest.mark.parametrize("with_h0", [False, True])
def test_padded_input_matches_torch_values_and_every_gradient(case, with_h0):
    kind, kwargs = case
    theirs, ours = _pair(kind, 3, 4, **kwargs)
    shape = (2, 5, 3) if kwargs.get("batch_first") else (5, 2, 3)
    x_t, x_o = _tensors(RNG.standard_normal(shape))
    if with_h0:
        h_t, h_o = _hidden(kind, kwargs, batch=2)
        worst = _compare(theirs, ours, (x_t, h_t), (x_o, h_o), lambda m, x, h: m(x, h))
    else:
        worst = _compare(theirs, ours, (x_t,), (x_o,), lambda m, x: m(x))
    assert worst < TOL


@pytest.mark.parametrize("case", LAYER_CASES, ids=_ids)
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_input_matches_torch(case, enforce_sorted):
    """Packed through the layer and padded back: outputs past each length are zero and h_n is
    taken at each sequence's own last step, as torch; gradients flow to the padded input."""
    kind, kwargs = case
    batch_first = kwargs.get("batch_first", False)
    theirs, ours = _pair(kind, 3, 4, **kwargs)
    lengths = [6, 4, 4, 1] if enforce_sorted else [2, 6, 1, 4]
    shape = (4, 6, 3) if batch_first else (6, 4, 3)
    x_t, x_o = _tensors(RNG.standard_normal(shape))
    h_t, h_o = _hidden(kind, kwargs, batch=4)

    def run(module, x, h):
        pack = R if module is theirs else ta_rnn
        packed = pack.pack_padded_sequence(x, lengths, batch_first=batch_first,
                                           enforce_sorted=enforce_sorted)
        out, state = module(packed, h)
        padded, out_lengths = pack.pad_packed_sequence(out, batch_first=batch_first,
                                                       total_length=7, padding_value=0.0)
        assert [int(n) for n in out_lengths] == lengths
        return padded, state

    assert _compare(theirs, ours, (x_t, h_t), (x_o, h_o), run) < TOL


def test_negative_control_packed_h_n_differs_from_the_padded_run():
    """If the layer ignored the lengths, h_n would be the padded run's: it is not."""
    _, ours = _pair("GRU", 3, 4)
    x = ta.tensor(RNG.standard_normal((5, 2, 3)))
    _, h_padded = ours(x)
    _, h_packed = ours(ta_rnn.pack_padded_sequence(x, [5, 2]))
    np.testing.assert_allclose(h_packed.numpy()[:, 0], h_padded.numpy()[:, 0], atol=1e-12)
    assert np.abs(h_packed.numpy()[:, 1] - h_padded.numpy()[:, 1]).max() > 1e-3


def test_negative_control_the_comparison_catches_a_wrong_gate_order():
    """Swap LSTM's f and g gate rows in our copy: values and gradients must then disagree."""
    theirs, ours = _pair("LSTM", 3, 4)
    with ta.no_grad():
        w = ours.weight_ih_l0.numpy().copy()
        w[4:8], w[8:12] = w[8:12].copy(), w[4:8].copy()
        ours.weight_ih_l0.copy_(ta.tensor(w))
    x_t, x_o = _tensors(RNG.standard_normal((4, 2, 3)))
    assert _compare(theirs, ours, (x_t,), (x_o,), lambda m, x: m(x)) > 1e-3


@pytest.mark.parametrize("case", LAYER_CASES[::3], ids=_ids)
def test_unbatched_input_matches_torch(case):
    kind, kwargs = case
    theirs, ours = _pair(kind, 3, 4, **kwargs)
    x_t, x_o = _tensors(RNG.standard_normal((5, 3)))
    h_t, h_o = _hidden(kind, kwargs, batch=None, unbatched=True)
    assert _compare(theirs, ours, (x_t, h_t), (x_o, h_o), lambda m, x, h: m(x, h)) < TOL


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_empty_batch_gives_torch_shapes(kind):
    theirs, ours = _pair(kind, 3, 4, num_layers=2)
    t_out, o_out = theirs(torch.zeros(5, 0, 3, dtype=torch.float64)), ours(
        ta.zeros(5, 0, 3, dtype=ta.float64))
    assert _structure(t_out) == _structure(o_out)


def test_float32_stays_float32_and_matches_torch_closely():
    theirs = torch.nn.LSTM(3, 4, num_layers=2)
    ours = nn.LSTM(3, 4, num_layers=2)
    ours.load_state_dict({k: ta.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = RNG.standard_normal((6, 2, 3)).astype(np.float32)
    out, (h, c) = ours(ta.tensor(x))
    assert out.dtype == h.dtype == c.dtype == ta.float32
    np.testing.assert_allclose(out.numpy(), theirs(torch.tensor(x))[0].detach().numpy(),
                               atol=1e-6)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_dropout_between_layers_only_in_training(kind):
    theirs, ours = _pair(kind, 3, 4, num_layers=2, dropout=0.5)
    x_t, x_o = _tensors(RNG.standard_normal((5, 2, 3)))
    theirs.eval(), ours.eval()
    assert _compare(theirs, ours, (x_t,), (x_o,), lambda m, x: m(x)) < TOL
    ours.train()
    ta.manual_seed(0)
    trained = ours(x_o)[0].numpy()
    assert np.abs(trained - ours.eval()(x_o)[0].numpy()).max() > 1e-3


def test_full_layer_gradcheck_float64():
    """The whole bidirectional two-layer LSTM with projections against finite differences."""
    _, ours = _pair("LSTM", 2, 3, num_layers=2, bidirectional=True, proj_size=2)
    x = ta.tensor(RNG.standard_normal((3, 2, 2)), requires_grad=True)
    h0 = ta.tensor(RNG.standard_normal((4, 2, 2)), requires_grad=True)
    c0 = ta.tensor(RNG.standard_normal((4, 2, 3)), requires_grad=True)
    assert gradcheck(lambda a, b, c: ours(a, (b, c))[0], [x, h0, c0])


# ------------------------------------------------------------------ parameters and state dicts
@pytest.mark.parametrize("case", LAYER_CASES, ids=_ids)
def test_parameter_names_shapes_and_order_are_torchs(case):
    kind, kwargs = case
    theirs, ours = getattr(torch.nn, kind)(3, 4, **kwargs), getattr(nn, kind)(3, 4, **kwargs)
    assert [(n, tuple(p.shape)) for n, p in theirs.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in ours.named_parameters()]
    assert list(theirs.state_dict()) == list(ours.state_dict())
    assert repr(theirs) == _repr(ours)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_state_dict_loads_both_ways_with_identical_results(kind):
    ours = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True).double()
    theirs = getattr(torch.nn, kind)(3, 4, num_layers=2, bidirectional=True).double()
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x = RNG.standard_normal((5, 2, 3))
    np.testing.assert_allclose(ours(ta.tensor(x))[0].numpy(),
                               theirs(torch.tensor(x))[0].detach().numpy(), atol=TOL)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM", "RNNCell", "GRUCell", "LSTMCell"])
def test_init_is_uniform_within_one_over_sqrt_hidden(kind):
    ta.manual_seed(0)
    module = getattr(nn, kind)(10, 64)
    bound = 1 / math.sqrt(64)
    values = np.concatenate([p.numpy().ravel() for p in module.parameters()])
    assert values.dtype == np.float32
    assert np.abs(values).max() <= bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.05 * bound     # U(-b, b) has std b/√3


def test_flatten_parameters_and_all_weights():
    ours, theirs = nn.LSTM(3, 4, num_layers=2), torch.nn.LSTM(3, 4, num_layers=2)
    ours.flatten_parameters()
    assert [[tuple(w.shape) for w in group] for group in ours.all_weights] == [
        [tuple(w.shape) for w in group] for group in theirs.all_weights]


# ------------------------------------------------------------------ cells
CELL_CASES = [("RNNCell", dict()), ("RNNCell", dict(nonlinearity="relu", bias=False)),
              ("GRUCell", dict()), ("GRUCell", dict(bias=False)), ("LSTMCell", dict()),
              ("LSTMCell", dict(bias=False))]


@pytest.mark.parametrize("case", CELL_CASES, ids=_ids)
@pytest.mark.parametrize("batched, with_hx", list(itertools.product([True, False], repeat=2)))
def test_cells_match_torch(case, batched, with_hx):
    kind, kwargs = case
    theirs, ours = _pair(kind, 3, 4, **kwargs)
    assert repr(theirs) == _repr(ours)
    x_t, x_o = _tensors(RNG.standard_normal((2, 3) if batched else (3,)))
    if not with_hx:
        assert _compare(theirs, ours, (x_t,), (x_o,), lambda m, x: m(x)) < TOL
        return
    shape = (2, 4) if batched else (4,)
    pairs = [_tensors(RNG.standard_normal(shape)) for _ in range(2 if kind == "LSTMCell" else 1)]
    h_t = tuple(p[0] for p in pairs) if kind == "LSTMCell" else pairs[0][0]
    h_o = tuple(p[1] for p in pairs) if kind == "LSTMCell" else pairs[0][1]
    assert _compare(theirs, ours, (x_t, h_t), (x_o, h_o), lambda m, x, h: m(x, h)) < TOL


# ------------------------------------------------------------------ errors, as torch raises them
def _raises_like_torch(make_torch, make_ours):
    with pytest.raises(Exception) as theirs:
        make_torch()
    with pytest.raises(type(theirs.value)) as ours:
        make_ours()
    return str(theirs.value), str(ours.value)


ERROR_CASES = {
    "input width": (lambda m, t: m(t.zeros(5, 2, 6, dtype=t.float64)), "LSTM", {}),
    "4-D input": (lambda m, t: m(t.zeros(5, 2, 3, 4, dtype=t.float64)), "GRU", {}),
    "4-D input RNN": (lambda m, t: m(t.zeros(5, 2, 3, 4, dtype=t.float64)), "RNN", {}),
    "h0 shape": (lambda m, t: m(t.zeros(5, 2, 3, dtype=t.float64),
                                t.zeros(2, 2, 4, dtype=t.float64)), "GRU", {}),
    "c0 shape": (lambda m, t: m(t.zeros(5, 2, 3, dtype=t.float64),
                                (t.zeros(2, 2, 4, dtype=t.float64),
                                 t.zeros(2, 1, 4, dtype=t.float64))), "LSTM",
                 dict(num_layers=2)),
    "hx 2-D for batched": (lambda m, t: m(t.zeros(5, 2, 3, dtype=t.float64),
                                          t.zeros(2, 4, dtype=t.float64)), "RNN", {}),
    "dtype": (lambda m, t: m(t.zeros(5, 2, 3, dtype=t.float32)), "LSTM", {}),
    "empty sequence": (lambda m, t: m(t.zeros(0, 2, 3, dtype=t.float64)), "LSTM", {}),
    "cell width": (lambda m, t: m(t.zeros(2, 5, dtype=t.float64)), "LSTMCell", {}),
    "cell 3-D": (lambda m, t: m(t.zeros(2, 2, 3, dtype=t.float64)), "GRUCell", {}),
    "cell batch": (lambda m, t: m(t.zeros(2, 3, dtype=t.float64),
                                  t.zeros(3, 4, dtype=t.float64)), "RNNCell", {}),
    "cell hidden": (lambda m, t: m(t.zeros(2, 3, dtype=t.float64),
                                   (t.zeros(2, 4, dtype=t.float64),
                                    t.zeros(2, 2, dtype=t.float64))), "LSTMCell", {}),
}


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_bad_input_fails_as_torch_does(name):
    call, kind, kwargs = ERROR_CASES[name]
    theirs, ours = _pair(kind, 3, 4, **kwargs)
    torch_message, our_message = _raises_like_torch(lambda: call(theirs, torch),
                                                    lambda: call(ours, ta))
    assert our_message.split(";")[0] == torch_message.split(";")[0] or \
        our_message.startswith(torch_message[:30])


CONSTRUCTOR_ERRORS = [("GRU", dict(proj_size=2)), ("LSTM", dict(proj_size=4)),
                      ("LSTM", dict(proj_size=-1)), ("LSTM", dict(dropout=1.5)),
                      ("RNN", dict(nonlinearity="gelu")), ("LSTM", dict(num_layers=0))]


@pytest.mark.parametrize("case", CONSTRUCTOR_ERRORS, ids=_ids)
def test_bad_arguments_fail_as_torch_does(case):
    kind, kwargs = case
    torch_message, our_message = _raises_like_torch(
        lambda: getattr(torch.nn, kind)(3, 4, **kwargs), lambda: getattr(nn, kind)(3, 4, **kwargs))
    assert our_message == torch_message


def test_hidden_size_zero_and_dropout_warning_as_torch():
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.LSTM(3, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.GRU(3, 4, dropout=0.5)
    assert any("non-zero dropout expects num_layers greater than 1" in str(w.message)
               for w in caught)
