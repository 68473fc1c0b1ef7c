"""out= as torch's on the functions that took none before stream out39 (issue 30): the value,
the returned object (out itself), the version bump, the dtype error, the resize and its
warning, the refusal under autograd, tuple outs and list outs; each against torch."""
import warnings

import numpy as np
import pytest

import tinyattn
import tinyattn.linalg
import tinyattn.nn.functional as F
import tinyattn.special

torch = pytest.importorskip("torch", reason="out= is checked against torch")
TF = torch.nn.functional


def _x(*shape, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return tinyattn.tensor(data), torch.tensor(data)


def _same(tiny, ref):
    np.testing.assert_allclose(tiny.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    assert tiny.dtype.name == str(ref.dtype).replace("torch.", "")


# (name, tinyattn call, torch call), each given (x, out=...)
CASES = [
    ("softmax", lambda x, **k: tinyattn.softmax(x, -1, **k),
     lambda x, **k: torch.softmax(x, -1, **k)),
    ("log_softmax", lambda x, **k: tinyattn.log_softmax(x, 0, **k),
     lambda x, **k: torch.log_softmax(x, 0, **k)),
    ("special.ndtr", tinyattn.special.ndtr, torch.special.ndtr),
    ("special.xlog1py", lambda x, **k: tinyattn.special.xlog1py(x, x.abs(), **k),
     lambda x, **k: torch.special.xlog1py(x, x.abs(), **k)),
    ("F.logsigmoid", F.logsigmoid, TF.logsigmoid),
    ("F.hardshrink", F.hardshrink, torch.nn.functional.hardshrink),
    ("F.normalize", lambda x, **k: F.normalize(x, dim=0, **k),
     lambda x, **k: TF.normalize(x, dim=0, **k)),
    ("transpose_copy", lambda x, **k: tinyattn.transpose_copy(x, 0, 1, **k),
     lambda x, **k: torch.transpose_copy(x, 0, 1, **k)),
    ("tensordot", lambda x, **k: tinyattn.tensordot(x, x, dims=([1], [1]), **k),
     lambda x, **k: torch.tensordot(x, x, dims=([1], [1]), **k)),
    ("linalg.det", lambda x, **k: tinyattn.linalg.det(x[:3, :3], **k),
     lambda x, **k: torch.linalg.det(x[:3, :3], **k)),
    ("scatter_add", lambda x, **k: tinyattn.scatter_add(
        x, 0, tinyattn.tensor([[0, 1, 2, 0]]), x[:1], **k),
     lambda x, **k: torch.scatter_add(x, 0, torch.tensor([[0, 1, 2, 0]]), x[:1], **k)),
]


@pytest.mark.parametrize("name,tiny_fn,torch_fn", CASES, ids=[c[0] for c in CASES])
def test_out_is_written_returned_and_bumped(name, tiny_fn, torch_fn):
    x, tx = _x(3, 4)
    expected = torch_fn(tx)
    out = tinyattn.zeros(tuple(expected.shape))
    version = out._version
    got = tiny_fn(x, out=out)
    assert got is out
    assert out._version > version
    _same(out, expected)
    tout = torch.zeros(expected.shape)
    assert torch_fn(tx, out=tout) is tout


# F.logsigmoid's out is resized without a warning in torch (tinyattn warns: left as is)
RESIZED = [c for c in CASES if c[0] != "F.logsigmoid"]


@pytest.mark.parametrize("name,tiny_fn,torch_fn", RESIZED, ids=[c[0] for c in RESIZED])
def test_out_wrong_shape_is_resized_with_torch_warning(name, tiny_fn, torch_fn):
    x, tx = _x(3, 4)
    for tiny_out, torch_out, warns in ((tinyattn.zeros(7), torch.zeros(7), True),
                                      (tinyattn.zeros(0), torch.zeros(0), False)):
        with warnings.catch_warnings(record=True) as tiny_w:
            warnings.simplefilter("always")
            tiny_fn(x, out=tiny_out)
        with warnings.catch_warnings(record=True) as torch_w:
            warnings.simplefilter("always")
            torch_fn(tx, out=torch_out)
        resized = [w for w in torch_w if "was resized" in str(w.message)]
        assert bool(resized) == warns                   # torch: warns unless out was empty
        assert bool([w for w in tiny_w if "was resized" in str(w.message)]) == warns
        _same(tiny_out, torch_out)


def test_out_dtype_that_cannot_hold_the_result_is_torchs_error():
    x, tx = _x(3, 4)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        torch.special.ndtr(tx, out=torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        tinyattn.special.ndtr(x, out=tinyattn.zeros(3, 4, dtype="int64"))
    # a wider dtype takes the special function's result, cast, in both
    wide, twide = tinyattn.zeros(3, 4, dtype="float64"), torch.zeros(3, 4, dtype=torch.float64)
    tinyattn.special.ndtr(x, out=wide)
    torch.special.ndtr(tx, out=twide)
    _same(wide, twide)


@pytest.mark.parametrize("name,tiny_fn,torch_fn",
                         [c for c in CASES if c[0] not in ("special.ndtr", "special.xlog1py",
                                                           "F.normalize")],
                         ids=[c[0] for c in CASES if c[0] not in ("special.ndtr",
                                                                  "special.xlog1py",
                                                                  "F.normalize")])
def test_out_of_another_dtype_refused_where_torchs_kernel_refuses_it(name, tiny_fn, torch_fn):
    """softmax, the view copies, linalg, scatter, ...: torch wants out in the result's dtype
    (no cast, unlike the special functions above)."""
    x, tx = _x(3, 4)
    shape = tuple(torch_fn(tx).shape)
    with pytest.raises(RuntimeError, match="(?i)double"):     # torch's words vary by op
        torch_fn(tx, out=torch.zeros(shape, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                           "double instead"):
        tiny_fn(x, out=tinyattn.zeros(shape, dtype="float64"))


def test_out_refused_while_recording_a_gradient():
    x, tx = _x(3, 4)
    x.requires_grad_(True)
    tx.requires_grad_(True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        torch.special.entr(tx, out=torch.zeros(3, 4))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        tinyattn.special.entr(x, out=tinyattn.zeros(3, 4))
    with tinyattn.no_grad():                         # allowed without grad mode, as torch
        out = tinyattn.zeros(3, 4)
        assert tinyattn.special.entr(x, out=out) is out
    with torch.no_grad():
        torch.special.entr(tx, out=torch.zeros(3, 4))


def test_tuple_out_of_slogdet_and_histogram():
    x, tx = _x(3, 3)
    sign, logabs = tinyattn.zeros(()), tinyattn.zeros(())
    got = tinyattn.linalg.slogdet(x, out=(sign, logabs))
    want = torch.linalg.slogdet(tx, out=(torch.zeros(()), torch.zeros(())))
    assert got[0] is sign and got[1] is logabs
    _same(sign, want[0])
    _same(logabs, want[1])
    hist, edges = tinyattn.zeros(0), tinyattn.zeros(0)
    got = tinyattn.histogram(x.reshape(-1), 4, out=(hist, edges))
    want = torch.histogram(tx.reshape(-1), 4, out=(torch.zeros(0), torch.zeros(0)))
    assert got[0] is hist and got[1] is edges
    _same(hist, want[0])
    _same(edges, want[1])


def test_list_out_of_split_copies_returns_none_as_torch():
    x, tx = _x(3, 4)
    pieces = [tinyattn.zeros(1, 4), tinyattn.zeros(2, 4)]
    tpieces = [torch.zeros(1, 4), torch.zeros(2, 4)]
    assert torch.split_with_sizes_copy(tx, [1, 2], out=tpieces) is None
    assert tinyattn.split_with_sizes_copy(x, [1, 2], out=pieces) is None
    for tiny, ref in zip(pieces, tpieces):
        _same(tiny, ref)
    rows = [tinyattn.zeros(4) for _ in range(3)]
    assert tinyattn.unbind_copy(x, out=rows) is None
    _same(rows[2], tx[2])
    with pytest.raises(RuntimeError, match="expected an out= argument of size 2, got size 1"):
        torch.split_with_sizes_copy(tx, [1, 2], out=[torch.zeros(1, 4)])
    with pytest.raises(RuntimeError, match="expected an out= argument of size 2, got size 1"):
        tinyattn.split_with_sizes_copy(x, [1, 2], out=[tinyattn.zeros(1, 4)])
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                           "double"):
        tinyattn.split_with_sizes_copy(x, [1, 2], out=[tinyattn.zeros(1, 4),
                                                       tinyattn.zeros(2, 4, dtype="float64")])


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "eye", "full", "randn"])
def test_factory_out_takes_outs_dtype_and_shape_silently(name):
    calls = {"zeros": lambda m, **k: m.zeros(2, 3, **k), "ones": lambda m, **k: m.ones(2, 3, **k),
             "empty": lambda m, **k: m.empty(2, 3, **k), "eye": lambda m, **k: m.eye(2, 3, **k),
             "full": lambda m, **k: m.full((2, 3), 2.5, **k),
             "randn": lambda m, **k: m.randn(2, 3, **k)}
    call = calls[name]
    out, tout = tinyattn.zeros(5, dtype="float64"), torch.zeros(5, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # factories resize without a warning
        assert call(tinyattn, out=out) is out
        assert call(torch, out=tout) is tout
    assert tuple(out.shape) == tuple(tout.shape) == (2, 3)
    assert out.dtype == np.float64
    if name not in ("empty", "randn"):
        _same(out, tout)
    with pytest.raises(RuntimeError, match="dtype Float does not match dtype of out parameter "
                                           r"\(Double\)"):
        call(torch, out=tout, dtype=torch.float32)
    with pytest.raises(RuntimeError, match="dtype Float does not match dtype of out parameter "
                                           r"\(Double\)"):
        call(tinyattn, out=out, dtype="float32")


def test_randn_into_an_integer_out_is_torchs_not_implemented():
    with pytest.raises(NotImplementedError, match="normal_kernel_cpu"):
        torch.randn(2, out=torch.zeros(2, dtype=torch.long))
    with pytest.raises(NotImplementedError, match="normal_kernel_cpu"):
        tinyattn.randn(2, out=tinyattn.zeros(2, dtype="int64"))


def test_negative_controls():
    """A function torch gives no out= refuses it loudly here too, and the comparison above
    does see a wrong value."""
    x, tx = _x(3, 4)
    with pytest.raises(TypeError):
        torch.Tensor.reshape(tx, 12, out=torch.zeros(12))
    with pytest.raises(TypeError):
        tinyattn.reshape(x, 12, out=tinyattn.zeros(12))
    out = tinyattn.zeros(3, 4)
    tinyattn.special.ndtr(x, out=out)
    with pytest.raises(AssertionError):
        _same(out, torch.special.ndtr(tx) + 1e-3)
