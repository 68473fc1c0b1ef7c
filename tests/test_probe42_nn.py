"""Probe stream nn42: nn names a PyTorch program uses that tinyattn lacked (alpha dropout
layers, init.sparse_/dirac_, parametrizations, weight/spectral norm, state-dict hooks,
load_state_dict(assign=True), set_submodule, to_empty, ...), each compared with torch."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn.utils.parametrizations as APZ
import tinyattn.nn.utils.parametrize as AP

torch = pytest.importorskip("torch")
TPZ = pytest.importorskip("torch.nn.utils.parametrizations")
TP = pytest.importorskip("torch.nn.utils.parametrize")


def _np(t):
    return np.asarray(t.detach().numpy())


def _same(t, a, tol=1e-5):
    return np.allclose(_np(t), _np(a), atol=tol, rtol=tol)


def _copy_state(tmod, amod):
    amod.load_state_dict({k: ta.tensor(v.detach().numpy()) for k, v in tmod.state_dict().items()})


def _build(lib, kind):
    nn = lib.nn
    return {"linear": lambda: nn.Linear(3, 4), "conv": lambda: nn.Conv2d(2, 3, 3),
            "convT": lambda: nn.ConvTranspose2d(2, 3, 3)}[kind]()


# ----------------------------------------------------------------- dropout layers, init
@pytest.mark.parametrize("name", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_layers(name):
    t, a = getattr(torch.nn, name)(0.2), getattr(ta.nn, name)(0.2)
    assert repr(t) == repr(a)
    x = np.random.default_rng(0).standard_normal((64, 32, 4)).astype(np.float32)
    t.eval(), a.eval()
    assert np.array_equal(_np(a(ta.tensor(x))), x)            # eval: the identity
    a.train()
    out = _np(a(ta.tensor(x)))
    assert not np.array_equal(out, x)                          # negative control
    assert abs(out.mean() - x.mean()) < 0.05 and abs(out.std() - x.std()) < 0.05
    with pytest.raises(ValueError):
        getattr(ta.nn, name)(1.5)


@pytest.mark.parametrize("shape,groups", [((4, 3, 3), 1), ((6, 4, 3, 3), 2),
                                          ((4, 6, 3, 3, 2), 2), ((2, 5, 4), 1)])
def test_init_dirac(shape, groups):
    t, a = torch.empty(shape), ta.empty(shape)
    torch.nn.init.dirac_(t, groups)
    ta.nn.init.dirac_(a, groups)
    assert np.array_equal(_np(t), _np(a))


@pytest.mark.parametrize("call", [lambda m: m.nn.init.dirac_(m.empty(3, 3)),
                                  lambda m: m.nn.init.dirac_(m.empty(3, 3, 3), 2),
                                  lambda m: m.nn.init.sparse_(m.empty(3), 0.1)])
def test_init_errors(call):
    with pytest.raises(ValueError):
        call(torch)
    with pytest.raises(ValueError):
        call(ta)


def test_init_sparse():
    a = ta.empty(10, 20)
    ta.nn.init.sparse_(a, 0.3, std=0.5)
    zeros = (_np(a) == 0).sum(0)
    assert (zeros == math.ceil(0.3 * 10)).all()                # as torch: per column
    assert 0.3 < _np(a)[_np(a) != 0].std() < 0.7
    with pytest.warns(FutureWarning):
        ta.nn.init.sparse(ta.empty(3, 3), 0.5)


# ----------------------------------------------------------------- Module methods
def test_set_submodule_and_errors():
    def run(lib):
        nn = lib.nn
        m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
        out = []
        for target, value, strict in [("", nn.ReLU(), False), ("1.0", nn.Tanh(), False),
                                      ("0.weight", nn.ReLU(), False),
                                      ("2.x", nn.ReLU(), False), ("1.5", nn.ReLU(), False),
                                      ("1.6", nn.ReLU(), True), ("1.0", 3, False)]:
            try:
                m.set_submodule(target, value, strict=strict)
                out.append("ok")
            except Exception as e:  # noqa: BLE001 - compared with torch's
                out.append((type(e).__name__, str(e)))
        return out, repr(m)
    assert run(torch) == run(ta)


def test_to_empty_keeps_parameter_objects():
    m = ta.nn.Linear(2, 3)
    w = m.weight
    assert m.to_empty(device="cpu") is m
    assert m.weight is w and m.weight.shape == (3, 2) and m.weight.requires_grad


def _hook_program(lib):
    nn = lib.nn
    lib.manual_seed(0)
    log = []
    s = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    s.register_state_dict_pre_hook(lambda m, p, kv: log.append(("pre root", p, kv)))
    s[0].register_state_dict_pre_hook(lambda m, p, kv: log.append(("pre0", p, kv)))
    s[1].register_state_dict_post_hook(lambda m, sd, p, meta: log.append(("post1", list(sd), p)))
    s.register_state_dict_post_hook(lambda m, sd, p, meta: log.append(("post", list(sd), p)))
    s[0]._register_state_dict_hook(lambda m, sd, p, meta: {"ignored": 1})

    def rename(m, sd, p, meta):
        sd[p + "renamed"] = sd.pop(p + "bias")
    s[1]._register_state_dict_hook(rename)
    log.append(list(s.state_dict()))
    log.append(list(s.state_dict(prefix="pp.")))
    bad = nn.Linear(2, 2)
    bad.register_state_dict_post_hook(lambda *a: 5)
    try:
        bad.state_dict()
    except RuntimeError as e:
        log.append(str(e))

    s = nn.Sequential(nn.Linear(2, 3))
    s[0].register_load_state_dict_post_hook(lambda m, k: log.append(("lpost0", repr(k))))
    s.register_load_state_dict_post_hook(lambda m, k: log.append(("lpost", repr(k))))
    s[0].register_load_state_dict_pre_hook(lambda m, *a: log.append(("lpre", a[1], a[3])))
    s[0]._register_load_state_dict_pre_hook(lambda *a: log.append(("lpre_", len(a), a[1])))
    log.append(repr(s.load_state_dict({"0.weight": lib.zeros(3, 2)}, strict=False)))

    def clear(m, k):
        k.missing_keys.clear()
    handle = s.register_load_state_dict_post_hook(clear)
    log.append(repr(s.load_state_dict({"0.weight": lib.ones(3, 2)})))
    log.append(float(s[0].weight.detach().sum()))
    handle.remove()
    s[0].register_load_state_dict_post_hook(lambda m, k: 1)
    try:
        s.load_state_dict({"0.weight": lib.ones(3, 2), "0.bias": lib.ones(3)})
    except AssertionError:
        log.append("AssertionError")

    m = nn.Linear(2, 2)

    def upgrade(state, prefix, *rest):
        if prefix + "w" in state:
            state[prefix + "weight"] = state.pop(prefix + "w")
    m._register_load_state_dict_pre_hook(upgrade)
    given = {"w": lib.full((2, 2), 3.0), "bias": lib.zeros(2)}
    log.append((repr(m.load_state_dict(given)), sorted(given), float(m.weight.detach().sum())))
    m.register_load_state_dict_pre_hook(lambda mod, sd, p, meta, strict, mk, uk, msgs:
                                        msgs.append("bad thing"))
    try:
        m.load_state_dict(given)
    except RuntimeError as e:
        log.append(str(e))
    return log


def test_state_dict_hooks_as_torch():
    assert _hook_program(ta) == _hook_program(torch)


def test_load_state_dict_assign():
    def run(lib):
        m = lib.nn.Linear(2, 2)
        w0 = m.weight
        sd = {"weight": lib.ones(2, 2, dtype=lib.float64), "bias": lib.zeros(2, dtype=lib.float64)}
        r = repr(m.load_state_dict(sd, assign=True))
        sd["weight"][0, 0] = 5          # the module holds the state dict's tensor itself
        out = [r, str(m.weight.dtype).replace("torch.", ""), type(m.weight).__name__,
               m.weight.requires_grad, m.weight is w0, float(m.weight.detach()[0, 0])]
        m.bias.requires_grad_(False)
        m.load_state_dict({"weight": lib.ones(2, 2), "bias": lib.zeros(2)}, assign=True)
        out += [m.bias.requires_grad, m.weight.requires_grad]
        return out
    assert run(ta) == run(torch)


# ----------------------------------------------------------------- parametrize
def _parametrize_program(lib):
    nn = lib.nn
    P = AP if lib is ta else TP
    out = []

    class Sym(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    class Scale(nn.Module):
        def forward(self, X):
            return 2 * X

        def right_inverse(self, X):
            return X / 2

    class Split(nn.Module):
        def forward(self, A, B):
            return A + B

        def right_inverse(self, X):
            return X / 2, X / 2

    m = nn.Linear(3, 3)
    w0 = m.weight
    P.register_parametrization(m, "weight", Sym())
    out += [repr(m), type(m).__name__, [c.__name__ for c in type(m).__mro__][1:],
            m.parametrizations.weight.original is w0, list(m.state_dict()),
            [n for n, _ in m.named_parameters()], list(m._parameters),
            P.is_parametrized(m), P.is_parametrized(m, "weight"), P.is_parametrized(m, "bias"),
            float((m.weight - m.weight.T).abs().sum()), isinstance(m, nn.Linear)]
    try:
        m.weight = lib.ones(3, 3)
    except RuntimeError as e:
        out.append(str(e))
    m = nn.Linear(3, 3)
    with lib.no_grad():
        m.weight.copy_(lib.arange(9.0).reshape(3, 3))
    w0 = m.weight
    P.register_parametrization(m, "weight", Scale())
    P.register_parametrization(m, "weight", Scale())
    out += [_np(m.parametrizations.weight.original).tolist(), _np(m.weight).tolist(), repr(m)]
    m.weight = lib.ones(3, 3)
    out += [_np(m.parametrizations.weight.original).tolist(),
            m.parametrizations.weight.original is w0]
    with P.cached():
        out.append(m.weight is m.weight)
    out.append(m.weight is m.weight)
    m.weight.sum().backward()
    out.append(_np(m.parametrizations.weight.original.grad).tolist())
    P.remove_parametrizations(m, "weight")
    out += [type(m).__name__, _np(m.weight).tolist(), type(m.weight).__name__, m.weight is w0,
            list(m.state_dict())]
    for call in [lambda: P.remove_parametrizations(m, "weight"),
                 lambda: P.register_parametrization(nn.Linear(2, 2), "foo", Sym())]:
        try:
            call()
        except ValueError as e:
            out.append(str(e))
    m = nn.Linear(2, 2)
    P.register_parametrization(m, "weight", Split())
    out += [list(m.state_dict()), float((m.weight - 2 * m.parametrizations.weight.original0)
                                        .abs().sum())]
    b = nn.BatchNorm1d(2)
    P.register_parametrization(b, "running_mean", Scale())
    out.append(list(b.state_dict()))
    m = nn.Linear(2, 2)
    P.register_parametrization(m, "weight", Scale())
    w = _np(m.weight).copy()
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    out += [type(m.weight).__name__, np.allclose(_np(m.weight) * 2, w),
            P.type_before_parametrizations(m).__name__]
    return out


def test_parametrize_as_torch():
    assert _parametrize_program(ta) == _parametrize_program(torch)


@pytest.mark.parametrize("kind", ["shape", "dtype"])
def test_parametrize_checks(kind):
    class Bad(ta.nn.Module):
        def forward(self, X):
            return X[0] if kind == "shape" else X.double()
    with pytest.raises(ValueError, match=f"may not change the {kind}"):
        AP.register_parametrization(ta.nn.Linear(2, 2), "weight", Bad())
    m = AP.register_parametrization(ta.nn.Linear(2, 2), "weight", Bad(), unsafe=True)
    assert m.weight.shape == ((2,) if kind == "shape" else (2, 2))


# ----------------------------------------------------------------- weight / spectral norm
@pytest.mark.parametrize("kind", ["linear", "conv", "convT"])
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_new_and_old(kind, dim):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        t, a = _build(torch, kind), _build(ta, kind)
        _copy_state(t, a)
        TPZ.weight_norm(t, dim=dim)
        APZ.weight_norm(a, dim=dim)
        assert list(t.state_dict()) == list(a.state_dict())
        assert all(_same(t.state_dict()[k], a.state_dict()[k]) for k in t.state_dict())
        assert _same(t.weight, a.weight)
        t.weight.pow(2).sum().backward()
        a.weight.pow(2).sum().backward()
        for i in (0, 1):
            assert _same(getattr(t.parametrizations.weight, f"original{i}").grad,
                         getattr(a.parametrizations.weight, f"original{i}").grad, 1e-4)
        t2, a2 = _build(torch, kind), _build(ta, kind)
        _copy_state(t2, a2)
        torch.nn.utils.weight_norm(t2, dim=dim)
        ta.nn.utils.weight_norm(a2, dim=dim)
        assert list(t2.state_dict()) == list(a2.state_dict())      # weight_g, weight_v
        assert all(_same(t2.state_dict()[k], a2.state_dict()[k]) for k in t2.state_dict())
        a3 = _build(ta, kind)                  # the old keys load into the new form
        APZ.weight_norm(a3, dim=dim)
        a3.load_state_dict({k: ta.tensor(v.detach().numpy()) for k, v in t2.state_dict().items()})
        assert _same(t2.weight, a3.weight)
        torch.nn.utils.remove_weight_norm(t2)
        ta.nn.utils.remove_weight_norm(a2)
        assert list(t2.state_dict()) == list(a2.state_dict()) and _same(t2.weight, a2.weight)


@pytest.mark.parametrize("kind", ["linear", "conv", "convT"])
def test_spectral_norm_new_and_old(kind):
    torch.manual_seed(0)
    t, a = _build(torch, kind), _build(ta, kind)
    _copy_state(t, a)
    TPZ.spectral_norm(t)
    APZ.spectral_norm(a)
    assert list(t.state_dict()) == list(a.state_dict())
    _copy_state(t, a)                            # the same u and v (random draws)
    for mode in ["train", "train", "eval"]:
        getattr(t, mode)(), getattr(a, mode)()
        assert _same(t.weight, a.weight)
        assert _same(t.parametrizations.weight[0]._u, a.parametrizations.weight[0]._u)
    t.train(), a.train()
    t.weight.sum().backward()
    a.weight.sum().backward()
    assert _same(t.parametrizations.weight.original.grad,
                 a.parametrizations.weight.original.grad, 1e-4)
    t2, a2 = _build(torch, kind), _build(ta, kind)
    _copy_state(t2, a2)
    torch.nn.utils.spectral_norm(t2)
    ta.nn.utils.spectral_norm(a2)
    assert list(t2.state_dict()) == list(a2.state_dict())
    _copy_state(t2, a2)
    x = np.random.default_rng(0).standard_normal((2, 2, 5, 5)).astype(np.float32)
    x = x if kind != "linear" else x[0, 0, :, :3]
    for mode in ["train", "train", "eval"]:
        getattr(t2, mode)(), getattr(a2, mode)()
        assert _same(t2(torch.tensor(x)), a2(ta.tensor(x)))
    torch.nn.utils.remove_spectral_norm(t2)
    ta.nn.utils.remove_spectral_norm(a2)
    assert list(t2.state_dict()) == list(a2.state_dict()) and _same(t2.weight, a2.weight)


def test_norm_errors_as_torch():
    def run(lib):
        nn, out = lib.nn, []
        PZ = APZ if lib is ta else TPZ
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            for call in [lambda: PZ.spectral_norm(nn.Linear(2, 2), n_power_iterations=0),
                         lambda: lib.nn.utils.spectral_norm(nn.Linear(2, 2),
                                                            n_power_iterations=0),
                         lambda: PZ.spectral_norm(nn.Linear(2, 2), name="foo"),
                         lambda: lib.nn.utils.spectral_norm(
                             lib.nn.utils.spectral_norm(nn.Linear(2, 2))),
                         lambda: lib.nn.utils.remove_spectral_norm(nn.Linear(2, 2)),
                         lambda: lib.nn.utils.weight_norm(lib.nn.utils.weight_norm(
                             nn.Linear(2, 2))),
                         lambda: lib.nn.utils.remove_weight_norm(nn.Linear(2, 2)),
                         lambda: PZ.orthogonal(nn.Linear(2, 2), orthogonal_map="qr")]:
                try:
                    call()
                    out.append("ok")
                except Exception as e:  # noqa: BLE001 - compared with torch's
                    out.append((type(e).__name__, str(e)))
        return out
    assert run(ta) == run(torch)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("omap", [None, "cayley", "householder"])
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal(shape, omap, triv):
    torch.manual_seed(0)
    t, a = torch.nn.Linear(shape[1], shape[0]), ta.nn.Linear(shape[1], shape[0])
    _copy_state(t, a)
    TPZ.orthogonal(t, orthogonal_map=omap, use_trivialization=triv)
    APZ.orthogonal(a, orthogonal_map=omap, use_trivialization=triv)
    assert list(t.state_dict()) == list(a.state_dict())
    assert _same(t.weight, a.weight)
    with torch.no_grad():
        t.parametrizations.weight.original.add_(0.1 * torch.randn(shape))
    _copy_state(t, a)
    assert _same(t.weight, a.weight)
    t.weight.pow(3).sum().backward()
    a.weight.pow(3).sum().backward()
    assert _same(t.parametrizations.weight.original.grad,
                 a.parametrizations.weight.original.grad, 1e-4)


# ----------------------------------------------------------------- accepted where torch refuses
def _outcome(fn, lib):
    try:
        out = fn(lib)
    except Exception as e:  # noqa: BLE001 - comparing what is raised
        return ("raises", type(e).__name__, str(e).split(" (")[0].split("; ")[0])
    return ("value", str(out.dtype).split(".")[-1], np.asarray(out.tolist()).tolist())


def _hook_result(dtype_name):
    def run(L):
        w = L.ones(3, requires_grad=True)
        y = w * 2
        y.register_hook(lambda g: g.to(getattr(L, dtype_name)))
        y.sum().backward()
        return w.grad
    return run


def _index_put(dst, src, index):
    def run(L):
        x = L.zeros(4, dtype=getattr(L, dst))
        x[index(L)] = L.tensor([1.5, 2.5], dtype=getattr(L, src))
        return x
    return run


_NOW_REFUSED_AS_TORCH = {
    "relu(bool)": lambda L: L.relu(L.tensor([True, False])),
    "F.relu(bool)": lambda L: L.nn.functional.relu(L.tensor([True, False])),
    "argmax(bool)": lambda L: L.tensor([False, True]).argmax(),
    "argmin(bool, dim)": lambda L: L.tensor([[False, True]]).argmin(dim=1),
    "bool @ bool": lambda L: L.tensor([[True, False]]) @ L.tensor([[True], [True]]),
    "mm(bool)": lambda L: L.mm(L.tensor([[True]]), L.tensor([[True]])),
    "int x[idx] = float": _index_put("int64", "float32", lambda L: L.tensor([0, 2])),
    "float x[idx] = double": _index_put("float32", "float64", lambda L: L.tensor([0, 2])),
    "int x[mask] = float": _index_put("int64", "float32",
                                      lambda L: L.tensor([True, False, True, False])),
    "hook -> float64": _hook_result("float64"),
    "hook -> int64": _hook_result("int64"),
    # controls: what torch accepts still works
    "relu(int)": lambda L: L.relu(L.tensor([1, -2])),
    "max(bool)": lambda L: L.tensor([False, True]).max(),
    "int @ int": lambda L: L.tensor([[1, 2]]) @ L.tensor([[3], [4]]),
    "int x[0:2] = float": lambda L: _slice_write(L),
    "hook -> float32": _hook_result("float32"),
}


def _slice_write(L):
    x = L.zeros(4, dtype=L.int64)
    x[0:2] = L.tensor([1.5, 2.5])
    return x


@pytest.mark.parametrize("case", list(_NOW_REFUSED_AS_TORCH))
def test_refused_as_torch(case):
    fn = _NOW_REFUSED_AS_TORCH[case]
    got, want = _outcome(fn, ta), _outcome(fn, torch)
    assert got[:2] == want[:2]
    if want[0] == "raises":
        assert got[2] == want[2]            # torch's words first
    else:
        assert got[2] == want[2]


_DOCUMENTED_EXTENSIONS = {
    "max_pool1d(int)": lambda L: L.nn.functional.max_pool1d(L.tensor([[[1, 3, 2, 4]]]), 2),
    "interpolate nearest int": lambda L: L.nn.functional.interpolate(
        L.tensor([[[1, 3]]]), scale_factor=2),
    "interpolate nearest bool": lambda L: L.nn.functional.interpolate(
        L.tensor([[[True, False]]]), scale_factor=2),
    "abs(bool)": lambda L: L.abs(L.tensor([True, False])),
    "abs out=float64": lambda L: L.abs(L.tensor([-1.5, 2.0]),
                                       out=L.empty(2, dtype=L.float64)),
    "argmax out=int32": lambda L: L.argmax(L.tensor([1.0, 3.0]), out=L.empty((), dtype=L.int32)),
}


@pytest.mark.parametrize("case", list(_DOCUMENTED_EXTENSIONS))
def test_documented_extensions_agree_with_torch_on_the_converted_input(case):
    # torch refuses these; tinyattn's value is what torch gives once the input or the
    # output is converted (docs/pytorch.md, what differs on purpose)
    assert _outcome(_DOCUMENTED_EXTENSIONS[case], torch)[0] == "raises"
    got = _outcome(_DOCUMENTED_EXTENSIONS[case], ta)
    assert got[0] == "value"
    want = {"max_pool1d(int)": [[[3, 4]]], "interpolate nearest int": [[[1, 1, 3, 3]]],
            "interpolate nearest bool": [[[True, True, False, False]]],
            "abs(bool)": [True, False], "abs out=float64": [1.5, 2.0],
            "argmax out=int32": 1}[case]
    assert got[2] == want


def test_inference_tensor_in_autograd_gives_torchs_gradient():
    with ta.inference_mode():
        t = ta.tensor([1.0, 2.0, 3.0])
    w = ta.ones(3, requires_grad=True)
    (w * t).sum().backward()
    assert _np(w.grad).tolist() == [1.0, 2.0, 3.0]       # torch refuses; d/dw (w t) = t


# ----------------------------------------------------------------- fractional max pooling
@pytest.mark.parametrize("dims,spatial,kernel,size", [
    (2, (7, 9), (2, 3), (4, 5)), (2, (6, 6), (3, 1), (4, 6)), (2, (5, 8), 2, (1, 3)),
    (3, (5, 6, 4), (2, 2, 1), (3, 2, 3)), (3, (6, 5, 7), 2, (4, 3, 1))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fractional_max_pool_given_samples(dims, spatial, kernel, size, dtype):
    rng = np.random.default_rng(dims + len(spatial))
    x = rng.standard_normal((2, 3) + spatial).astype(dtype)
    x[0, 0].flat[2] = np.nan                           # NaN wins, as torch's
    samples = rng.random((2, 3, dims)).astype(dtype)
    name = f"fractional_max_pool{dims}d"
    tx, ax = torch.tensor(x, requires_grad=True), ta.tensor(x, requires_grad=True)
    to, ti = getattr(torch.nn.functional, name)(tx, kernel, output_size=size,
                                                  return_indices=True,
                                                  _random_samples=torch.tensor(samples))
    ao, ai = getattr(ta.nn.functional, name)(ax, kernel, output_size=size,
                                             return_indices=True,
                                             _random_samples=ta.tensor(samples))
    assert np.array_equal(_np(to), _np(ao), equal_nan=True) and str(ao.dtype) == dtype
    assert np.array_equal(_np(ti), _np(ai))
    g = rng.standard_normal(to.shape).astype(dtype)
    to.backward(torch.tensor(g))
    ao.backward(ta.tensor(g))
    assert np.allclose(_np(tx.grad), _np(ax.grad))


@pytest.mark.parametrize("dims", [2, 3])
def test_fractional_max_pool_module(dims):
    samples = torch.rand(1, 3, dims, dtype=torch.float64)
    name = f"FractionalMaxPool{dims}d"
    t = getattr(torch.nn, name)(2, output_ratio=0.5, return_indices=True,
                                _random_samples=samples)
    a = getattr(ta.nn, name)(2, output_ratio=0.5, return_indices=True,
                             _random_samples=ta.tensor(samples.numpy()))
    assert repr(t) == repr(a) and list(t.state_dict()) == list(a.state_dict())
    x = np.random.default_rng(0).random((3,) + (7,) * dims)      # no batch dim
    (to, ti), (ao, ai) = t(torch.tensor(x)), a(ta.tensor(x))
    assert np.array_equal(_np(to), _np(ao)) and np.array_equal(_np(ti), _np(ai))
    drawn = getattr(ta.nn, name)(2, output_size=3)(ta.tensor(x[None]))
    assert drawn.shape == (1, 3) + (3,) * dims


def test_fractional_max_pool_errors_as_torch():
    def run(lib):
        F, out = lib.nn.functional, []
        for call in [
                lambda: F.fractional_max_pool2d(lib.rand(1, 1, 5, 6), 3, output_size=(4, 2)),
                lambda: F.fractional_max_pool3d(lib.rand(1, 1, 5, 6, 7), 2,
                                                output_size=(4, 2, 2)),
                lambda: F.fractional_max_pool2d(lib.rand(1, 1, 5, 6), 2),
                lambda: F.fractional_max_pool2d(lib.rand(2, 3, 6, 6), 2, output_size=3,
                                                _random_samples=lib.rand(1, 3, 2)),
                lambda: F.fractional_max_pool2d(lib.rand(2, 3, 6, 6), 2, output_size=3,
                                                _random_samples=lib.rand(2, 3, 3)),
                lambda: F.fractional_max_pool2d(lib.rand(2, 3, 6, 6), 2, output_size=3,
                                                _random_samples=lib.rand(2, 3, 2,
                                                                         dtype=lib.float64)),
                lambda: lib.nn.FractionalMaxPool2d(2),
                lambda: lib.nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5),
                lambda: lib.nn.FractionalMaxPool3d(2, output_ratio=1.5)]:
            try:
                call()
                out.append("ok")
            except Exception as e:  # noqa: BLE001 - compared with torch's
                out.append((type(e).__name__, str(e)))
        return out
    assert run(ta) == run(torch)


# ----------------------------------------------------------------- smaller names
def test_get_total_norm_and_clip_grads_with_norm():
    def run(lib):
        m = lib.nn.Linear(3, 2)
        with lib.no_grad():
            m.weight.copy_(lib.tensor([[1.0, 2, 3], [4, 5, 6]]))
            m.bias.copy_(lib.tensor([1.0, -1]))
        m(lib.ones(4, 3)).pow(2).sum().backward()
        grads = [p.grad for p in m.parameters()]
        norm = lib.nn.utils.get_total_norm(grads)
        lib.nn.utils.clip_grads_with_norm_(m.parameters(), 1.0, norm)
        return [round(float(norm), 3), round(float(lib.nn.utils.get_total_norm(grads)), 5),
                round(float(lib.nn.utils.get_total_norm(grads, float("inf"))), 5)]
    assert run(ta) == run(torch)


def test_buffer_and_skip_init():
    def run(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = lib.nn.Buffer(lib.ones(2))
                self.b = lib.nn.Buffer(lib.zeros(1), persistent=False)
        m = M()
        out = [list(m.state_dict()), [n for n, _ in m.named_buffers()], m.a.requires_grad,
               isinstance(m.a, lib.nn.Buffer), isinstance(lib.ones(1), lib.nn.Buffer),
               m._get_name()]
        s = lib.nn.utils.skip_init(lib.nn.Linear, 3, 4)
        return out + [type(s).__name__, tuple(s.weight.shape), s.weight.requires_grad]
    assert run(ta) == run(torch)


def _functional_call_program(lib):
    from importlib import import_module
    functional_call = import_module(lib.__name__ + ".func").functional_call
    nn, out = lib.nn, []
    m = nn.Linear(2, 2)
    with lib.no_grad():
        m.weight.fill_(0.5)
        m.bias.fill_(0.25)
    w = lib.ones(2, 2, requires_grad=True)
    y = functional_call(m, {"weight": w}, (lib.ones(1, 2),))
    out += [y.tolist(), float(m.weight.detach().sum()), type(m.weight).__name__]
    y.sum().backward()
    out += [w.grad.tolist(), m.weight.grad]
    for call in [lambda: functional_call(m, {"weight": w, "foo": w}, lib.ones(1, 2),
                                         strict=True),
                 lambda: functional_call(m, {"foo": w}, lib.ones(1, 2)).tolist(),
                 lambda: functional_call(m, ({"weight": w}, {"bias": lib.zeros(2)}),
                                         lib.ones(1, 2), {}).tolist(),
                 lambda: functional_call(m, ({"weight": w}, {"weight": w}), lib.ones(1, 2))]:
        try:
            out.append(call())
        except Exception as e:  # noqa: BLE001 - compared with torch's
            out.append((type(e).__name__, str(e)))
    e, h = nn.Embedding(3, 2), nn.Linear(2, 3, bias=False)
    h.weight = e.weight                                     # tied: one name replaces both
    out.append(functional_call(nn.Sequential(e, h), {"0.weight": lib.zeros(3, 2)},
                               (lib.tensor([1]),)).tolist())
    return out


def test_functional_call_as_torch():
    assert _functional_call_program(ta) == _functional_call_program(torch)


def _weight_norm_training(lib):
    import copy
    import pickle
    nn = lib.nn
    PZ = APZ if lib is ta else TPZ
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((16, 4)).astype(np.float32))
    y = lib.tensor(rng.standard_normal((16, 1)).astype(np.float32))
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    with lib.no_grad():
        model[0].weight.copy_(lib.tensor(rng.standard_normal((8, 4)).astype(np.float32)))
        model[2].weight.copy_(lib.tensor(rng.standard_normal((1, 8)).astype(np.float32)))
        model[0].bias.zero_()
        model[2].bias.zero_()
    PZ.weight_norm(model[0])
    opt = lib.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(5):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    out = [round(float(loss), 4), [n for n, _ in model.named_parameters()]]
    twin = copy.deepcopy(model)
    out += [type(twin[0]).__name__, float(((twin(x) - model(x)) ** 2).sum().detach()) == 0.0]
    try:
        pickle.dumps(model)
    except RuntimeError as e:
        out.append(str(e)[:60])
    model.eval()
    out.append(model[0].parametrizations.weight[0].training)
    return out


def test_weight_norm_model_trains_as_torch():
    assert _weight_norm_training(ta) == _weight_norm_training(torch)


@pytest.mark.parametrize("d,shape", [(1, (2, 3, 5)), (2, (2, 3, 4, 4)), (3, (2, 3, 2, 3, 2))])
def test_lazy_instance_norm_as_torch(d, shape):
    x = np.random.default_rng(d).standard_normal(shape).astype(np.float32)

    def run(lib):
        m = getattr(lib.nn, f"LazyInstanceNorm{d}d")()        # affine, tracking: torch's
        before = repr(m)
        y = m(lib.tensor(x))
        return [before, repr(m), type(m).__name__, list(m.state_dict()),
                np.round(_np(y), 4).tolist(), np.round(_np(m.running_mean), 4).tolist()]
    assert run(ta) == run(torch)


def _fusion_program(lib):
    nn, rng, out = lib.nn, np.random.default_rng(0), []
    for make, norm, shape, transpose in [
            (lambda: nn.Conv2d(2, 3, 3), nn.BatchNorm2d, (2, 2, 5, 5), False),
            (lambda: nn.Conv2d(2, 3, 3, bias=False), nn.BatchNorm2d, (2, 2, 5, 5), False),
            (lambda: nn.ConvTranspose2d(2, 3, 3), nn.BatchNorm2d, (2, 2, 5, 5), True),
            (lambda: nn.Linear(4, 3), nn.BatchNorm1d, (5, 4), None)]:
        layer, bn = make(), norm(3)
        layer.load_state_dict({k: lib.tensor(rng.standard_normal(tuple(v.shape))
                                             .astype(np.float32))
                               for k, v in layer.state_dict().items()})
        with lib.no_grad():
            bn.running_mean.copy_(lib.tensor(rng.standard_normal(3).astype(np.float32)))
            bn.running_var.copy_(lib.tensor(rng.random(3).astype(np.float32) + 0.5))
            bn.weight.copy_(lib.tensor(rng.standard_normal(3).astype(np.float32)))
        layer.eval(), bn.eval()
        fused = nn.utils.fuse_linear_bn_eval(layer, bn) if transpose is None else \
            nn.utils.fuse_conv_bn_eval(layer, bn, transpose=transpose)
        x = lib.tensor(rng.standard_normal(shape).astype(np.float32))
        out.append((np.round(_np(fused(x)), 4).tolist() == np.round(_np(bn(layer(x))), 4)
                    .tolist(), fused.bias.requires_grad, type(fused.weight).__name__))
    try:
        nn.utils.fuse_conv_bn_eval(nn.Conv2d(1, 1, 1), nn.BatchNorm2d(1))
    except AssertionError as e:
        out.append(str(e))
    return out


def test_fuse_conv_and_linear_with_batch_norm_as_torch():
    assert _fusion_program(ta) == _fusion_program(torch)
