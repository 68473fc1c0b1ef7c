"""Stream rows42 (issue 30): the conformance table's "to fix" rows made to agree with torch.

Each case runs the same call in torch and in tinyattn and compares what a program sees.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle these tests compare with")

import tinyattn as ta
from tinyattn.backend import cuda_is_available


def _raises(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return type(exc)
    return None


# ------------------------------------------------------------------ narrow_copy's dim errors
@pytest.mark.parametrize("shape, dim", [((10, 5, 20), 3), ((2, 3), 2), ((2, 3), 7),
                                        ((2, 3), -3), ((4,), -2), ((2, 3), 1)])
def test_narrow_copy_dim_error_type_as_torch(shape, dim):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want = _raises(lambda: torch.narrow_copy(torch.from_numpy(x), dim, 0, 1))
    got = _raises(lambda: ta.narrow_copy(ta.tensor(x), dim, 0, 1))
    assert got is want
    got_method = _raises(lambda: ta.tensor(x).narrow_copy(dim, 0, 1))
    assert got_method is want
    if want is None:        # negative control: the valid dim gives torch's values
        np.testing.assert_array_equal(ta.narrow_copy(ta.tensor(x), dim, 0, 1).numpy(),
                                      torch.narrow_copy(torch.from_numpy(x), dim, 0, 1).numpy())


def test_narrow_keeps_index_error():
    x = np.zeros((2, 3), np.float32)
    assert _raises(lambda: torch.narrow(torch.from_numpy(x), 2, 0, 1)) is IndexError
    assert _raises(lambda: ta.narrow(ta.tensor(x), 2, 0, 1)) is IndexError


# ------------------------------------------------------------------ factories' layout=, pin_memory=
_X = np.ones((2, 3), np.float32)
_FACTORIES = {
    "zeros": lambda m, **k: m.zeros(2, 3, **k),
    "ones": lambda m, **k: m.ones(2, **k),
    "full": lambda m, **k: m.full((2,), 1.5, **k),
    "empty": lambda m, **k: m.empty(2, **k),
    "arange": lambda m, **k: m.arange(3.0, **k),
    "linspace": lambda m, **k: m.linspace(0, 1, 3, **k),
    "logspace": lambda m, **k: m.logspace(0, 1, 3, **k),
    "eye": lambda m, **k: m.eye(2, **k),
    "rand": lambda m, **k: m.rand(2, **k),
    "randn": lambda m, **k: m.randn(2, **k),
    "randint": lambda m, **k: m.randint(3, (2,), **k),
    "randperm": lambda m, **k: m.randperm(3, **k),
    "normal": lambda m, **k: m.normal(0.0, 1.0, (2,), **k),
    "zeros_like": lambda m, **k: m.zeros_like(m.tensor(_X), **k),
    "ones_like": lambda m, **k: m.ones_like(m.tensor(_X), **k),
    "empty_like": lambda m, **k: m.empty_like(m.tensor(_X), **k),
    "full_like": lambda m, **k: m.full_like(m.tensor(_X), 2.0, **k),
    "rand_like": lambda m, **k: m.rand_like(m.tensor(_X), **k),
    "randn_like": lambda m, **k: m.randn_like(m.tensor(_X), **k),
    "randint_like": lambda m, **k: m.randint_like(m.tensor(_X), 3, **k),
    "new_zeros": lambda m, **k: m.tensor(_X).new_zeros(2, **k),
    "new_ones": lambda m, **k: m.tensor(_X).new_ones(2, **k),
    "new_empty": lambda m, **k: m.tensor(_X).new_empty(2, **k),
    "new_full": lambda m, **k: m.tensor(_X).new_full((2,), 1.0, **k),
    "tril_indices": lambda m, **k: m.tril_indices(3, 3, **k),
}


@pytest.mark.parametrize("name", sorted(_FACTORIES))
def test_factories_take_layout_strided_as_torch(name):
    make = _FACTORIES[name]
    for kwargs in ({"layout": "strided"}, {"layout": None}):
        theirs = make(torch, layout=torch.strided if kwargs["layout"] else None)
        ours = make(ta, layout=ta.strided if kwargs["layout"] else None)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype).replace("torch.", "") == str(theirs.dtype).replace("torch.", "")
        assert ours.layout == ta.strided and repr(ours.layout) == repr(theirs.layout)
    # a value that is not a layout: torch's TypeError
    assert _raises(lambda: make(torch, layout=1)) is TypeError
    assert _raises(lambda: make(ta, layout=1)) is TypeError
    # a sparse layout: refused loudly, naming it (never a dense tensor in its place)
    with pytest.raises(NotImplementedError, match="sparse_coo"):
        make(ta, layout=ta.sparse_coo)


@pytest.mark.parametrize("name", sorted(set(_FACTORIES) - {"tril_indices"}))
def test_factories_take_pin_memory_as_torch(name):
    make = _FACTORIES[name]
    assert make(ta, pin_memory=False, device="cpu").layout == ta.strided
    make(torch, pin_memory=False, device="cpu")
    if not torch.cuda.is_available() and not cuda_is_available():
        assert _raises(lambda: make(torch, pin_memory=True)) is RuntimeError
        assert _raises(lambda: make(ta, pin_memory=True)) is RuntimeError


def test_layout_names_and_tensor_attributes_as_torch():
    for name in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
                 "sparse_bsc", "jagged"):
        assert repr(getattr(ta, name)) == repr(getattr(torch, name)) == str(getattr(ta, name))
        assert isinstance(getattr(ta, name), ta.layout)
    assert ta.strided != ta.sparse_coo
    assert ta.ones(2).is_sparse is torch.ones(2).is_sparse is False
    # torch takes layout=/pin_memory= on normal only with two numbers
    assert _raises(lambda: torch.normal(torch.zeros(2), 1.0, layout=torch.strided)) is TypeError
    assert _raises(lambda: ta.normal(ta.zeros(2), 1.0, layout=ta.strided)) is TypeError
    assert _raises(lambda: torch.tensor([1.0], pin_memory=False)) is None
    assert _raises(lambda: ta.tensor([1.0], pin_memory=False)) is None


# ------------------------------------------------------------------ optimizer state's types
def _kind(value):
    if hasattr(value, "dtype") and hasattr(value, "shape") and not isinstance(value, np.ndarray):
        return ("tensor", str(value.dtype).replace("torch.", ""), tuple(value.shape))
    return type(value).__name__


def _lbfgs_t(m, lr, line_search, max_iter):
    w = m.nn.Parameter(m.tensor([[1.5, -0.5], [0.3, 2.0]]))
    a = m.tensor([[3.0, 1.0], [1.0, 2.0]])
    opt = m.optim.LBFGS([w], lr=lr, line_search_fn=line_search, max_iter=max_iter)

    def closure():
        opt.zero_grad()
        loss = ((w @ a) ** 2).sum() + (w ** 4).sum()
        loss.backward()
        return loss
    kinds = []
    for _ in range(2):
        opt.step(closure)
        kinds.append((_kind(opt.state[w]["t"]), _kind(opt.state_dict()["state"][0]["t"])))
    return kinds


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("lr", [1, 0.5, "tensor32", "tensor64"])
@pytest.mark.parametrize("line_search, max_iter", [(None, 1), (None, 20), ("strong_wolfe", 1),
                                                   ("strong_wolfe", 20)])
def test_lbfgs_step_length_keeps_torch_s_type(lr, line_search, max_iter):
    """t is lr itself (an int stays an int, a Tensor lr that tensor), 1.0 * lr, or a 0-d
    tensor where it is computed from the gradient (the first iteration, a line search)."""
    def make(m):
        if lr == "tensor32":
            return m.tensor(0.5)
        if lr == "tensor64":
            return m.tensor(1.0, dtype=m.float64)
        return lr
    assert _lbfgs_t(ta, make(ta), line_search, max_iter) == \
        _lbfgs_t(torch, make(torch), line_search, max_iter)


_STEPPED = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Adadelta", "Adagrad", "ASGD",
            "RMSprop", "Rprop", "Adafactor", "SGD"]


def _live_state(m, name, dtype):
    w = m.nn.Parameter(m.ones(2, 2, dtype=dtype))
    cls = getattr(m.optim, name)
    opt = cls([w], lr=0.1, momentum=0.9) if name == "SGD" else cls([w])
    kinds = []
    for _ in range(2):
        w.grad = m.ones(2, 2, dtype=dtype)
        opt.step()
        kinds.append({k: _kind(v) for k, v in opt.state[w].items() if _kind(v)[0] == "tensor"
                      and _kind(v)[2] == ()})
    saved = opt.state_dict()
    opt.load_state_dict(saved)          # torch casts floating state but step to p's dtype
    kinds.append({k: _kind(v) for k, v in opt.state[w].items() if _kind(v)[0] == "tensor"
                  and _kind(v)[2] == ()})
    w.grad = m.ones(2, 2, dtype=dtype)
    opt.step()
    kinds.append({k: _kind(v) for k, v in opt.state[w].items() if _kind(v)[0] == "tensor"
                  and _kind(v)[2] == ()})
    values = {k: float(v) for k, v in opt.state[w].items() if _kind(v)[0] == "tensor"
              and _kind(v)[2] == ()}
    return kinds, values


@pytest.mark.parametrize("name", _STEPPED)
def test_optimizer_step_and_scalars_are_torch_s_tensors_while_stepping(name):
    for dtype in ("float32", "float64"):
        ours, our_values = _live_state(ta, name, getattr(ta, dtype))
        theirs, their_values = _live_state(torch, name, getattr(torch, dtype))
        assert ours == theirs
        assert our_values.keys() == their_values.keys()
        for key in our_values:
            assert our_values[key] == pytest.approx(their_values[key], rel=1e-6)
    if name != "SGD":               # negative control: there is a step to compare
        assert "step" in ours[0]


def test_a_user_optimizer_keeps_the_step_it_stores():
    """torch leaves a subclass's own state alone: an int step stays an int."""
    for m in (ta, torch):
        class Mine(m.optim.Optimizer):
            def __init__(self, params):
                super().__init__(params, {"lr": 0.1})

            def step(self, closure=None):
                for group in self.param_groups:
                    for p in group["params"]:
                        state = self.state[p]
                        state["step"] = state.get("step", 0) + 1
        w = m.nn.Parameter(m.ones(2))
        opt = Mine([w])
        opt.step()
        assert type(opt.state[w]["step"]) is int
        assert type(opt.state_dict()["state"][0]["step"]) is int


@pytest.mark.parametrize("name, args", [("StepLR", (2,)), ("ExponentialLR", (0.9,)),
                                        ("ReduceLROnPlateau", ()), ("ConstantLR", ()),
                                        ("CosineAnnealingWarmRestarts", (3,))])
def test_scheduler_repr_is_the_default_object_repr_as_torch(name, args):
    """torch's schedulers print as ``<torch.optim.lr_scheduler.StepLR object at 0x...>``;
    tinyattn's the same with its own package name."""
    for m in (torch, ta):
        w = m.nn.Parameter(m.ones(2))
        sched = getattr(m.optim.lr_scheduler, name)(m.optim.SGD([w], lr=0.1), *args)
        prefix = f"<{m.__name__}.optim.lr_scheduler.{name} object at 0x"
        assert repr(sched).startswith(prefix) and str(sched) == repr(sched)


def test_lbfgs_reads_the_loss_without_a_warning():
    import warnings
    for m in (torch, ta):
        w = m.nn.Parameter(m.ones(2))
        opt = m.optim.LBFGS([w], max_iter=3)

        def closure():
            opt.zero_grad()
            loss = (w ** 2).sum()
            loss.backward()
            return loss
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            opt.step(closure)


# ------------------------------------------------------------------ linear_cross_entropy chunked
def _lce_after_write(m, reduction, which, chunked, dtype="float32"):
    rng = np.random.default_rng(0)
    dt = getattr(m, dtype)
    x = m.tensor(rng.standard_normal((6, 4)), dtype=dt).requires_grad_()
    w = m.tensor(rng.standard_normal((5, 4)), dtype=dt).requires_grad_()
    b = m.tensor(rng.standard_normal(5), dtype=dt).requires_grad_()
    t = m.tensor(rng.integers(0, 5, 6))
    kwargs = {"options": m.nn.LinearCrossEntropyOptions(batch_chunk_size=2)} if chunked else {}
    out = m.nn.functional.linear_cross_entropy(x, w, t, linear_bias=b, reduction=reduction,
                                               **kwargs)
    target = {"x": x, "w": w, "b": b}[which]
    with m.no_grad():
        target.add_(1)
    try:
        out.sum().backward()
    except RuntimeError:
        return "raises"
    return np.asarray(x.grad.float().numpy(), dtype=np.float64)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("which", ["x", "w", "b"])
@pytest.mark.parametrize("chunked", [True, False])
def test_linear_cross_entropy_saves_what_torch_s_op_saves(reduction, which, chunked):
    """options= (torch's chunked kernel): mean/sum keep no input (a later write leaves the
    backward valid, with the forward's values); none keeps them all, the bias too."""
    ours = _lce_after_write(ta, reduction, which, chunked)
    theirs = _lce_after_write(torch, reduction, which, chunked)
    if isinstance(theirs, str):
        assert ours == theirs
    else:
        assert not isinstance(ours, str)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_linear_cross_entropy_chunked_half_none_rounds_once_as_torch(dtype):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((8, 5)), rng.standard_normal((6, 5))
    t = rng.integers(0, 6, 8)
    got = {}
    for m in (torch, ta):
        dt = getattr(m, dtype)
        got[m.__name__] = m.nn.functional.linear_cross_entropy(
            m.tensor(x, dtype=dt), m.tensor(w, dtype=dt), m.tensor(t), reduction="none",
            options=m.nn.LinearCrossEntropyOptions(batch_chunk_size=3)).float().numpy()
    np.testing.assert_array_equal(got["tinyattn"], got["torch"])


def test_linear_cross_entropy_options_ignored_warns_as_torch():
    import warnings
    for m in (torch, ta):
        x, w = m.ones(3, 4), m.ones(5, 4)
        probs = m.ones(3, 5) / 5
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m.nn.functional.linear_cross_entropy(
                x, w, probs, options=m.nn.LinearCrossEntropyOptions(batch_chunk_size=2))
        assert any("``options`` ignored" in str(c.message) for c in caught), m.__name__


@pytest.mark.parametrize("name", ["i0e", "i1", "i1e", "ndtri", "log_ndtr", "erfcx"])
def test_a_write_to_a_0d_special_result_makes_backward_raise_as_torch(name):
    """The backward keeps the result; a 0-d result too (NumPy hands back a scalar there)."""
    for m in (torch, ta):
        x = m.tensor(0.3, dtype=m.float64, requires_grad=True) * 1
        out = getattr(m.special, name)(x)
        with m.no_grad():
            out.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.backward()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0])
def test_embedding_max_norm_renormalises_half_rows_as_torch(dtype, norm_type):
    """torch rounds the row's norm to the weight's dtype, then the scale once."""
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((12, 5)) * 3).astype(np.float32)
    ids = np.array([[0, 2, 3], [5, 2, 11]])
    got = {}
    for m in (torch, ta):
        weight = m.tensor(w).to(getattr(m, dtype))
        out = m.nn.functional.embedding_bag(m.tensor(ids), weight, max_norm=0.7,
                                            norm_type=norm_type, mode="sum")
        got[m.__name__] = (weight.float().numpy(), out.float().numpy())
    np.testing.assert_array_equal(got["tinyattn"][0], got["torch"][0])
    np.testing.assert_array_equal(got["tinyattn"][1], got["torch"][1])
