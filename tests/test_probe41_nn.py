"""Probe 41 (nn modules against torch): each test builds the same thing in torch and in
tinyattn and compares what a learner would see (values, order, printed output)."""
from collections import OrderedDict

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as tnn

torch = pytest.importorskip("torch")


def test_load_state_dict_result_prints_as_torch():
    results = []
    for lib in (torch, ta):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
        full = m.load_state_dict(m.state_dict())
        partial = {k: v for k, v in m.state_dict().items() if "bias" not in k}
        partial["extra.w"] = lib.zeros(1)
        r = m.load_state_dict(partial, strict=False)
        results.append((repr(full), str(full), repr(r), str(r), list(r.missing_keys),
                        list(r.unexpected_keys), tuple(r)[1], full == ([], [])))
    assert results[1] == results[0]
    assert results[0][0] == "<All keys matched successfully>"        # not vacuous


@pytest.mark.parametrize("make_items", [
    lambda lib: {"x": lib.ones(2), "a": lib.zeros(1), "m": lib.ones(3)},   # plain dict: sorted
    lambda lib: OrderedDict([("x", lib.ones(2)), ("a", lib.zeros(1))]),         # kept in order
    lambda lib: [("q", lib.ones(1)), ("b", lib.ones(2))],                       # pairs: kept
])
def test_parameter_dict_order_as_torch(make_items):
    orders = []
    for lib in (torch, ta):
        pd = lib.nn.ParameterDict(make_items(lib))
        pd.update({"d": lib.ones(1), "c": lib.ones(1)})

        class W(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.pd = pd
        w = W()
        orders.append((list(pd), [k for k, _ in w.named_parameters()], list(w.state_dict()),
                       [tuple(p.shape) for p in w.parameters()]))
    assert orders[1] == orders[0]


def _outcome(fn, lib):
    try:
        out = fn(lib)
    except Exception as e:                        # noqa: BLE001 - comparing what is raised
        return ("raises", isinstance(e, RuntimeError))
    return ("value", str(out.dtype).split(".")[-1])


_MIXED_PRODUCTS = {
    "int64 @ float32": lambda L: L.ones(2, 2, dtype=L.int64) @ L.ones(2, 2),
    "float32 @ int64": lambda L: L.ones(2, 2) @ L.ones(2, 2, dtype=L.int64),
    "int32 @ int64": lambda L: L.ones(2, 2, dtype=L.int32) @ L.ones(2, 2, dtype=L.int64),
    "bool @ float32": lambda L: L.ones(2, 2, dtype=L.bool) @ L.ones(2, 2),
    "matrix @ vector": lambda L: L.ones(2, 2, dtype=L.int64) @ L.ones(2),
    "bmm": lambda L: L.bmm(L.ones(1, 2, 2, dtype=L.int64), L.ones(1, 2, 2)),
    "F.linear int64 input": lambda L: L.nn.functional.linear(L.ones(2, 2, dtype=L.int64),
                                                             L.ones(3, 2)),
    "nn.Linear int64 batch": lambda L: L.nn.Linear(2, 3)(L.ones(4, 2, dtype=L.int64)),
    "F.linear int64 bias": lambda L: L.nn.functional.linear(L.ones(2, 2), L.ones(3, 2),
                                                            L.ones(3, dtype=L.int64)),
    "addmm": lambda L: L.addmm(L.ones(2), L.ones(2, 2, dtype=L.int64), L.ones(2, 2)),
    # controls: one dtype works in both
    "int64 @ int64": lambda L: L.ones(2, 2, dtype=L.int64) @ L.ones(2, 2, dtype=L.int64),
    "nn.Linear float batch": lambda L: L.nn.Linear(2, 3)(L.ones(4, 2)),
}


@pytest.mark.parametrize("case", list(_MIXED_PRODUCTS))
def test_matrix_products_refuse_integer_float_mix_as_torch(case):
    # tinyattn used to promote through NumPy and return float64, a result torch never gives
    fn = _MIXED_PRODUCTS[case]
    assert _outcome(fn, ta) == _outcome(fn, torch)


@pytest.mark.parametrize("make", [
    lambda L: L.nn.functional.layer_norm(L.tensor([[1, 2, 4], [3, 3, 9]]), (3,)),
    lambda L: L.nn.LayerNorm(3)(L.tensor([[1, 2, 4], [3, 3, 9]])),
    lambda L: L.nn.functional.layer_norm(L.tensor([[True, False, True]]), (3,)),
    lambda L: L.nn.LayerNorm(3)(L.tensor([[1.0, 2.0, 4.0]])),         # control: works
])
def test_layer_norm_on_integers_raises_as_torch(make):
    # it used to normalise in int64 and truncate: [[1, 2, 4]] -> [[-1, 0, 1]]
    assert _outcome(make, ta) == _outcome(make, torch)


_LOSS_NODES = {
    # the Annotated Transformer prints its LabelSmoothing loss: KLDivLoss(reduction="sum")
    "kl_div sum": lambda L, x, y: L.nn.KLDivLoss(reduction="sum")(x, y),
    "kl_div batchmean": lambda L, x, y: L.nn.functional.kl_div(x, y, reduction="batchmean"),
    "kl_div none": lambda L, x, y: L.nn.functional.kl_div(x, y, reduction="none"),
    "kl_div none log_target": lambda L, x, y: L.nn.functional.kl_div(x, y, reduction="none",
                                                                     log_target=True),
    "l1 mean": lambda L, x, y: L.nn.L1Loss()(x, y),
    "l1 sum": lambda L, x, y: L.nn.functional.l1_loss(x, y, reduction="sum"),
    "l1 none": lambda L, x, y: L.nn.functional.l1_loss(x, y, reduction="none"),
    "nll (N, C)": lambda L, x, y: L.nn.NLLLoss()(x, L.tensor([0, 2, 1])),
    "nll (N, C, d)": lambda L, x, y: L.nn.functional.nll_loss(x[None], L.tensor([[0, 2, 1, 2]])),
    "nll (N, C, d) none": lambda L, x, y: L.nn.functional.nll_loss(
        x[None], L.tensor([[0, 2, 1, 2]]), reduction="none"),
    "ce (N, C, h, w)": lambda L, x, y: L.nn.functional.cross_entropy(
        x[None, :, :, None], L.tensor([[[0], [2], [1], [2]]]), reduction="none"),
    "ce label_smoothing": lambda L, x, y: L.nn.CrossEntropyLoss(label_smoothing=0.1)(
        x, L.tensor([0, 2, 1])),
    "ce plain (control)": lambda L, x, y: L.nn.functional.cross_entropy(x, L.tensor([0, 2, 1])),
}


@pytest.mark.parametrize("case", list(_LOSS_NODES))
def test_loss_grad_fn_names_as_torch(case):
    # printed as tensor(..., grad_fn=<SumBackward0>): tinyattn printed <KlDivBackward0>,
    # <L1LossBackward0>, <NLLLossBackward0> (a misspelling of torch's NllLossBackward0), ...
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.random((3, 4)).astype(np.float32)
    names = []
    for lib in (torch, ta):
        out = _LOSS_NODES[case](lib, lib.tensor(x, requires_grad=True), lib.tensor(y))
        names.append(out.grad_fn.name())
    assert names[1] == names[0]


def test_float_of_a_tensor_that_requires_grad_warns_once_as_torch(monkeypatch):
    # torch 2.13 says this once per process on float(loss) (d2l's float(l.sum())), and not for
    # int(), .item() or a detached tensor
    import warnings
    from tinyattn.tensor import conversion
    monkeypatch.setattr(conversion, "_float_of_grad_warned", [False])
    x = ta.tensor([1.5, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        int(x.sum()), x.sum().item(), float(x.sum().detach())      # control: silent
    with pytest.warns(UserWarning, match="requires_grad=True to a scalar"):
        assert float(x.sum()) == 3.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(x.sum() * 2) == 7.0                            # once only


def _extra_state_run(lib):
    nn = lib.nn

    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(1, 1)
            self.register_buffer("b", lib.zeros(1))
            self.steps = 3

        def get_extra_state(self):
            return {"steps": self.steps}

        def set_extra_state(self, state):
            self.steps = state["steps"]

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = Counter()
            self.z = nn.Linear(1, 1)

    state = Wrap().state_dict()
    fresh = Wrap()
    fresh.m.steps = 0
    fresh.load_state_dict(state)
    del state["m._extra_state"]
    partial = Wrap().load_state_dict(state, strict=False)
    with pytest.raises(RuntimeError):
        Wrap().load_state_dict(state)                     # strict: the key is missing
    return list(Wrap().state_dict()), fresh.m.steps, repr(partial)


def test_get_set_extra_state_round_trip_as_torch():
    # tinyattn left _extra_state out of the state dict and never called set_extra_state:
    # the loaded module silently kept steps = 0
    assert _extra_state_run(ta) == _extra_state_run(torch)
    assert _extra_state_run(ta)[1] == 3


def test_parameter_containers_print_their_items_as_torch():
    outs = []
    for lib in (torch, ta):
        nn = lib.nn
        outs.append((repr(nn.ParameterList([nn.Parameter(lib.ones(2, dtype=lib.bfloat16)),
                                            lib.ones(2, 3, dtype=lib.float64)])),
                     repr(nn.ParameterDict({"b": nn.Parameter(lib.ones(2, 3)),
                                            "a": nn.Parameter(lib.ones(()))})),
                     repr(nn.ParameterList()), repr(nn.Sequential(nn.ParameterList(
                         [nn.Parameter(lib.ones(4))])))))
    assert outs[1] == outs[0]
    assert "of size 2x3" in outs[0][0]                       # not vacuous


def test_convert_torch_state_dict_takes_bfloat16_checkpoints():
    # LLM checkpoints are bfloat16: torch's .numpy() refuses them, so the conversion raised
    # torch's TypeError ("Got unsupported ScalarType BFloat16")
    from tinyattn.nn.torch_compat import convert_torch_state_dict
    t = torch.nn.Linear(4, 3).to(torch.bfloat16)
    m = tnn.Linear(4, 3).to(ta.bfloat16)
    m.load_state_dict(convert_torch_state_dict(t.state_dict()))
    x = torch.randn(2, 4).to(torch.bfloat16)
    ours = m(ta.tensor(x.float().numpy(), dtype=ta.bfloat16))
    assert str(ours.dtype) == "bfloat16"
    np.testing.assert_array_equal(ours.float().numpy(), t(x).float().detach().numpy())
    np.testing.assert_array_equal(m.weight.float().detach().numpy(),
                                  t.weight.float().detach().numpy())


_WEIGHT_MIXES = {
    "ce float32 logits, float64 weight": lambda L: L.nn.functional.cross_entropy(
        L.randn(3, 4), L.tensor([0, 1, 3]), weight=L.ones(4, dtype=L.float64)),
    "CrossEntropyLoss float64 weight, smoothing": lambda L: L.nn.CrossEntropyLoss(
        weight=L.ones(4, dtype=L.float64), label_smoothing=0.1)(L.randn(3, 4), L.tensor([0, 1, 3])),
    "ce float64 logits, float32 weight": lambda L: L.nn.functional.cross_entropy(
        L.randn(3, 4, dtype=L.float64), L.tensor([0, 1, 3]), weight=L.ones(4)),
    "nll float64 weight": lambda L: L.nn.functional.nll_loss(
        L.randn(3, 4), L.tensor([0, 1, 3]), weight=L.ones(4, dtype=L.float64)),
    # controls: probability targets may mix (torch promotes), one dtype works
    "ce probabilities, float64 weight": lambda L: L.nn.functional.cross_entropy(
        L.randn(3, 4), L.ones(3, 4) / 4, weight=L.ones(4, dtype=L.float64)),
    "ce one dtype": lambda L: L.nn.functional.cross_entropy(
        L.randn(3, 4), L.tensor([0, 1, 3]), weight=L.ones(4)),
}


@pytest.mark.parametrize("case", list(_WEIGHT_MIXES))
def test_class_weight_of_another_dtype_raises_as_torch(case):
    # tinyattn computed these, the cross-entropy in float64 (torch never returns that here)
    fn = _WEIGHT_MIXES[case]
    assert _outcome(fn, ta) == _outcome(fn, torch)


@pytest.mark.parametrize("op", ["huber_loss", "soft_margin_loss", "smooth_l1_loss"])
@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("float64", "float32"),
                                    ("float16", "float32"), ("float32", "float32")])
def test_loss_result_dtype_with_a_target_of_another_dtype_as_torch(op, dtypes):
    # huber_loss and soft_margin_loss have the input's dtype in torch; tinyattn promoted
    # (a float32 model's loss came back float64). smooth_l1_loss promotes in both: control.
    outs = []
    for lib in (torch, ta):
        x = lib.tensor([[0.5, 2.0, -1.0]], dtype=getattr(lib, dtypes[0]))
        y = lib.tensor([[0.1, 0.2, 0.3]], dtype=getattr(lib, dtypes[1]))
        out = getattr(lib.nn.functional, op)(x, y, reduction="none")
        outs.append((str(out.dtype).split(".")[-1], np.round(out.float().numpy(), 3).tolist()))
    assert outs[1] == outs[0]


@pytest.mark.parametrize("make", [
    lambda m: m.nn.Embedding(5, 3, padding_idx=1, _freeze=True),
    lambda m: m.nn.Embedding(5, 3, padding_idx=1),
    lambda m: m.nn.EmbeddingBag(5, 3, padding_idx=1)])
def test_embedding_tables_are_made_as_torch_makes_them(make):
    """One helper makes both tables: the padding row zeroed, _freeze honoured without a given
    weight (it was ignored), and a _weight of the wrong shape is torch's AssertionError."""
    ours, theirs = make(ta), make(torch)
    assert ours.weight.requires_grad == theirs.weight.requires_grad
    assert ours.weight[1].tolist() == theirs.weight[1].tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        type(ours)(5, 3, _weight=ta.zeros(4, 3))
