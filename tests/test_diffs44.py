"""Differences from torch 2.13 closed in the diffs44 stop, each checked against torch itself:
sort/argsort's keyword-only ``stable``, ``Module.type`` and ``Module.register_backward_hook``,
what the matmul family keeps for backward, optimizer state versions, out= overlap refusals (the
deprecated ``torch.cuda.amp`` / ``torch.cpu.amp`` warnings: tests/test_amp_run_torch.py)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="these checks compare with torch itself")

import tinyattn  # noqa: E402
import tinyattn.nn as tnn  # noqa: E402


def _outcome(fn):
    try:
        fn()
        return "ok"
    except TypeError:
        return "TypeError"


SORT_CALLS = [
    ("sort", lambda m, x: m.sort(x, 1, stable=True)),
    ("sort", lambda m, x: m.sort(x, 1, True, stable=True)),
    ("sort", lambda m, x: m.sort(x, 1, stable=None)),
    ("sort", lambda m, x: m.sort(x, stable=True, dim=1)),
    ("sort", lambda m, x: m.sort(x, dim=1, descending=True, stable=True)),
    ("sort", lambda m, x: m.sort(x, stable=True)),
    ("sort", lambda m, x: m.sort(x, 1, True)),
    ("sort", lambda m, x: m.sort(input=x, stable=False)),
    ("method sort", lambda m, x: x.sort(1, stable=True)),
    ("method sort", lambda m, x: x.sort(stable=True, dim=0)),
    ("argsort", lambda m, x: m.argsort(x, 1, stable=True)),
    ("argsort", lambda m, x: m.argsort(x, 1, True, stable=False)),
    ("argsort", lambda m, x: m.argsort(x, stable=True, dim=1)),
    ("argsort", lambda m, x: m.argsort(x, 1, True)),
    ("method argsort", lambda m, x: x.argsort(1, stable=True)),
    ("method argsort", lambda m, x: x.argsort(stable=True, descending=True)),
    ("msort", lambda m, x: m.msort(x, stable=True)),
    ("topk", lambda m, x: m.topk(x, 2, 1, True, True)),
]


@pytest.mark.parametrize("index", range(len(SORT_CALLS)),
                         ids=[f"{i}-{name}" for i, (name, _) in enumerate(SORT_CALLS)])
def test_sort_signatures_accept_and_refuse_as_torch(index):
    _, call = SORT_CALLS[index]
    data = np.array([[3.0, 1.0, 2.0, 1.0], [0.0, 5.0, 5.0, -1.0]], dtype=np.float32)
    theirs = _outcome(lambda: call(torch, torch.tensor(data)))
    ours = _outcome(lambda: call(tinyattn, tinyattn.tensor(data)))
    assert ours == theirs


def test_positional_dim_with_stable_names_the_keyword_spelling():
    with pytest.raises(TypeError, match=r"invalid combination of arguments.*\n.*bool stable"):
        tinyattn.sort(tinyattn.ones(2, 3), 1, stable=True)
    with pytest.raises(TypeError, match=r"argsort\(x, dim=\.\.\., descending=\.\.\., "):
        tinyattn.argsort(tinyattn.ones(2, 3), 1, stable=True)
    # the keyword spelling sorts (stably) as torch's
    data = np.array([[1.0, 0.0, 1.0, 0.0, 1.0]], dtype=np.float32)
    ours = tinyattn.sort(tinyattn.tensor(data), dim=1, descending=True, stable=True)
    theirs = torch.sort(torch.tensor(data), dim=1, descending=True, stable=True)
    np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())


def _module_pair():
    torch.manual_seed(0)
    theirs = torch.nn.Linear(3, 2)
    theirs.register_buffer("count", torch.tensor([1, 2], dtype=torch.int64))
    ours = tnn.Linear(3, 2)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()}, strict=False)
    ours.register_buffer("count", tinyattn.tensor(np.array([1, 2], dtype=np.int64)))
    return theirs, ours


@pytest.mark.parametrize("dst", ["float64", "torch.DoubleTensor", "float16", "torch.FloatTensor"])
def test_module_type_casts_every_tensor_as_torch(dst):
    theirs, ours = _module_pair()
    theirs.weight.grad = torch.ones(2, 3)
    ours.weight.grad = tinyattn.ones(2, 3)
    torch_dst = getattr(torch, dst) if "." not in dst else dst
    ours_dst = getattr(tinyattn, dst) if "." not in dst else dst
    assert theirs.type(torch_dst) is theirs
    assert ours.type(ours_dst) is ours
    for name, tensor in theirs.state_dict().items():
        mine = ours.state_dict()[name]
        assert str(tensor.dtype).replace("torch.", "") == str(mine.dtype).replace("torch.", "")
        np.testing.assert_array_equal(mine.numpy(), tensor.numpy())
    assert str(ours.weight.grad.dtype).endswith(str(theirs.weight.grad.dtype)[6:])
    assert isinstance(ours.weight, tnn.Parameter) and ours.weight.requires_grad


def test_module_type_to_an_integer_dtype_is_refused_as_torch():
    theirs, ours = _module_pair()
    with pytest.raises(RuntimeError, match="must be floating point or complex"):
        theirs.type(torch.int32)
    with pytest.raises(RuntimeError, match="must be floating point or complex"):
        ours.type(tinyattn.int32)
    with pytest.raises(TypeError):
        ours.type()
    assert ours.weight.dtype == np.float32         # refused before anything changed


def test_tensor_type_takes_torch_legacy_names():
    x = tinyattn.ones(2)
    assert x.type("torch.DoubleTensor").dtype == np.float64
    assert x.type("torch.LongTensor").type() == torch.ones(2).type("torch.LongTensor").type()
    with pytest.raises(ValueError, match="invalid type"):
        x.type("torch.NoSuchTensor")


def test_register_backward_hook_refuses_loudly_naming_the_full_hook():
    # torch accepts it, with a FutureWarning, and hands the hook AddmmBackward's inputs'
    # gradients (bias, input, weight.T), shapes tinyattn's graph does not reproduce
    seen = []
    layer = torch.nn.Linear(3, 2)
    layer.register_backward_hook(lambda m, gin, gout: seen.append([g.shape for g in gin]))
    with pytest.warns(FutureWarning, match="register_full_backward_hook"):
        layer(torch.randn(4, 3, requires_grad=True)).sum().backward()
    assert seen == [[(2,), (4, 3), (3, 2)]]
    with pytest.raises(RuntimeError, match="use register_full_backward_hook|Use register_full"):
        tnn.Linear(3, 2).register_backward_hook(lambda m, gin, gout: None)


# ---- what the matmul family keeps for backward: an input only when its partner needs a
# gradient (torch's addmm/mm/bmm/... save mat1 only for grad mat2 and mat2 only for grad mat1)

def _family(m, functional):
    return {
        "linear_bias": (lambda a, w, b: functional.linear(a, w, b), [(4, 3), (2, 3), (2,)]),
        "linear_nobias": (lambda a, w: functional.linear(a, w), [(4, 3), (2, 3)]),
        "linear3d_bias": (lambda a, w, b: functional.linear(a, w, b),
                          [(5, 4, 3), (2, 3), (2,)]),
        "addmm": (m.addmm, [(4, 2), (4, 3), (3, 2)]),
        "addmv": (m.addmv, [(4,), (4, 3), (3,)]),
        "addr": (m.addr, [(4, 3), (4,), (3,)]),
        "baddbmm": (m.baddbmm, [(2, 4, 2), (2, 4, 3), (2, 3, 2)]),
        "addbmm": (m.addbmm, [(4, 2), (2, 4, 3), (2, 3, 2)]),
        "bmm": (m.bmm, [(2, 4, 3), (2, 3, 2)]),
        "mm": (m.mm, [(4, 3), (3, 2)]),
        "mv": (m.mv, [(4, 3), (3,)]),
        "matmul3d": (m.matmul, [(2, 4, 3), (2, 3, 2)]),
        "matmul_broadcast": (m.matmul, [(2, 4, 3), (3, 2)]),
        "matmul_1d2d": (m.matmul, [(3,), (3, 2)]),
        "dot": (m.dot, [(3,), (3,)]),
        "outer": (m.outer, [(4,), (3,)]),
        "einsum": (lambda a, b: m.einsum("ij,jk->ik", a, b), [(4, 3), (3, 2)]),
        "inner": (m.inner, [(4, 3), (2, 3)]),
        "tensordot": (lambda a, b: m.tensordot(a, b, dims=1), [(4, 3), (3, 2)]),
    }


def _family_cases():
    import itertools
    for name, (_, shapes) in _family(torch, torch.nn.functional).items():
        for needs in itertools.product([False, True], repeat=len(shapes)):
            if any(needs):
                yield name, needs


def _write_after_forward(m, functional, name, needs, data, written):
    """Forward, then ``mul_(2)`` on the inputs ``written`` picks (non-leaf copies), then
    backward: ("ok", gradients) or the error's type."""
    fn, _ = _family(m, functional)[name]
    leaves = [m.tensor(d, requires_grad=r) for d, r in zip(data, needs)]
    inputs = [leaf * 1 for leaf in leaves]
    out = fn(*inputs)
    for i, t in enumerate(inputs):
        if written(i):
            with m.no_grad():
                t.mul_(2)
    try:
        out.sum().backward()
    except RuntimeError as error:
        assert "modified by an inplace operation" in str(error)
        return "RuntimeError", None
    return "ok", [leaf.grad.numpy() if r else None for leaf, r in zip(leaves, needs)]


@pytest.mark.parametrize("name,needs", list(_family_cases()),
                         ids=[f"{n}-{''.join('1' if r else '0' for r in q)}"
                              for n, q in _family_cases()])
def test_matmul_family_keeps_an_input_only_for_its_partners_gradient(name, needs):
    import tinyattn.nn.functional as tf
    rng = np.random.default_rng(len(name))
    shapes = _family(torch, torch.nn.functional)[name][1]
    data = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    frozen = lambda i: not needs[i]                     # noqa: E731
    theirs = _write_after_forward(torch, torch.nn.functional, name, needs, data, frozen)
    ours = _write_after_forward(tinyattn, tf, name, needs, data, frozen)
    assert ours[0] == theirs[0]
    if theirs[0] == "ok":
        for mine, reference in zip(ours[1], theirs[1]):
            if reference is not None:
                np.testing.assert_allclose(mine, reference, rtol=1e-5, atol=1e-5)
    # negative control: writing into every input after the forward is still caught where
    # torch catches it (a kept input changed), so the check above is not vacuous
    everything = lambda i: True                         # noqa: E731
    theirs = _write_after_forward(torch, torch.nn.functional, name, needs, data, everything)
    ours = _write_after_forward(tinyattn, tf, name, needs, data, everything)
    assert ours[0] == theirs[0]


def test_linear_layer_with_a_frozen_weight_keeps_no_input():
    """A frozen layer (weight fixed) under an input that needs a gradient: dX = G @ W needs
    only W, so both torch and tinyattn accept a write into the input after the forward, and
    refuse one into the weight."""
    for m, nn in ((torch, torch.nn), (tinyattn, tnn)):
        layer = nn.Linear(3, 2)
        layer.weight.requires_grad_(False)
        x = m.ones(4, 3, requires_grad=True)
        h = x * 1
        out = layer(h)
        with m.no_grad():
            h.mul_(0)
        out.sum().backward()                            # accepted: no error
        expected = np.tile(layer.weight.detach().numpy().sum(0), (4, 1))
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)
        out = layer(x * 1)
        with m.no_grad():
            layer.weight.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()


# ---- optimizer state and parameters: _version as torch's step bumps it

OPTIMIZERS = [
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1)),
    ("SGD", dict(lr=0.1)),
    ("Adam", dict(lr=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.1)),
    ("AdamW", dict(lr=0.1, weight_decay=0)),
    ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(weight_decay=0.1)),
    ("Adamax", dict(weight_decay=0.1)),
    ("Adagrad", dict(lr_decay=0.1)),
    ("RMSprop", dict(momentum=0.5, centered=True)),
    ("Adadelta", dict()),
    ("ASGD", dict(t0=1)),
    ("Rprop", dict()),
    ("Adafactor", dict(weight_decay=0.1)),
]


def _versions_over_steps(m, name, options, shape):
    p = m.nn.Parameter(m.tensor(np.linspace(0.5, 2.0, int(np.prod(shape)),
                                            dtype=np.float32).reshape(shape)))
    idle = m.nn.Parameter(m.tensor(np.ones(3, dtype=np.float32)))   # never has a gradient
    opt = getattr(m.optim, name)([p, idle], **options)
    seen, held = {}, {}
    for step in range(3):
        (p * 3).sum().backward()
        opt.step()
        seen[f"param {step}"] = p._version
        for key, value in sorted(opt.state[p].items()):
            if hasattr(value, "_version"):
                seen[f"{key} {step}"] = value._version
                held.setdefault(key, value)
        opt.zero_grad()
    seen["held"] = {k: (v is opt.state[p][k], v._version, float(v.sum()))
                    for k, v in held.items()}
    seen["idle"] = (idle._version, len(opt.state.get(idle, {})))
    return seen


@pytest.mark.parametrize("shape", [(4,), (3, 4)], ids=["vector", "matrix"])
@pytest.mark.parametrize("name,options", OPTIMIZERS,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZERS)])
def test_optimizer_state_versions_follow_torch(name, options, shape):
    theirs = _versions_over_steps(torch, name, options, shape)
    ours = _versions_over_steps(tinyattn, name, options, shape)
    assert {k: v for k, v in ours.items() if k != "held"} == \
        {k: v for k, v in theirs.items() if k != "held"}
    for key, (same, version, total) in theirs["held"].items():
        assert ours["held"][key][:2] == (same, version), key
        np.testing.assert_allclose(ours["held"][key][2], total, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("key", ["exp_avg", "exp_avg_sq", "step"])
def test_a_kept_state_tensor_used_in_a_graph_sees_the_step(key):
    """A program that keeps ``opt.state[p][key]`` and uses it in a graph gets torch's
    in-place error at backward after the next step (not a gradient from stale values)."""
    outcomes = []
    for m in (torch, tinyattn):
        p = m.nn.Parameter(m.ones(3))
        opt = m.optim.Adam([p], lr=0.1)
        (p * p).sum().backward()
        opt.step()
        kept = opt.state[p][key]
        w = m.ones(3 if kept.dim() else 1, requires_grad=True)
        loss = (w * kept).sum() * (w * kept).sum()          # Mul saves kept
        (p * p).sum().backward()
        opt.step()
        try:
            loss.backward()
            outcomes.append("ok")
        except RuntimeError as error:
            assert "modified by an inplace operation" in str(error)
            outcomes.append("refused")
    assert outcomes == ["refused", "refused"]


# ---- out= that overlaps its inputs or itself: torch's rules

def _out_cases(m):
    index = lambda *v: m.tensor(list(v))            # noqa: E731
    eight = lambda: m.arange(8.)                    # noqa: E731
    longs = lambda n: m.zeros(n, dtype=m.int64)     # noqa: E731
    return {
        # elementwise: all of an input's memory is fine, part of it is not
        "add full": lambda x=eight(): m.add(x, x, out=x),
        "add partial": lambda x=eight(): m.add(x[1:], x[1:], out=x[:-1]),
        "neg partial": lambda x=eight(): m.neg(x[1:], out=x[:-1]),
        "exp interleaved": lambda x=eight(): m.exp(x[::2], out=x[1::2]),
        "mul strided block": lambda y=eight(): m.mul(y.view(2, 4)[:, :2], 2,
                                                     out=y.view(2, 4)[:, 1:3]),
        "eq partial": lambda y=eight(): m.eq(y[1:], y[1:], out=y[:-1]),
        "addcmul partial": lambda y=eight(): m.addcmul(y[1:], y[1:], y[1:], out=y[:-1]),
        "lerp partial": lambda y=eight(): m.lerp(y[1:], y[1:], 0.5, out=y[:-1]),
        "clamp partial": lambda y=eight(): m.clamp(y[1:], 0, 3, out=y[:-1]),
        "clamp full": lambda y=eight(): m.clamp(y, 0, 3, out=y),
        "where partial": lambda y=eight(): m.where(y[1:] > 1, y[1:], y[1:], out=y[:-1]),
        "pow partial": lambda y=eight(): m.pow(y[1:], 2, out=y[:-1]),
        "logical_not partial": lambda y=eight(): m.logical_not(y[1:], out=y[:-1]),
        "cumsum full": lambda y=eight(): m.cumsum(y, 0, out=y),
        "cumsum partial": lambda y=eight(): m.cumsum(y[1:], 0, out=y[:-1]),
        "diff partial": lambda y=eight(): m.diff(y[1:], out=y[:-2]),
        "special.entr partial": lambda y=eight(): m.special.entr(y[1:], out=y[:-1]),
        # no check in torch
        "mm full": lambda a=m.ones(3, 3): m.mm(a, m.eye(3), out=a),
        "matmul partial": lambda y=eight(): m.matmul(m.ones(2, 7), y[1:], out=y[:2]),
        "sum partial": lambda y=eight(): m.sum(y.view(2, 4), 1, out=y[:2]),
        "sort full": lambda y=eight(): m.sort(y, out=(y, longs(8))),
        "cummax partial": lambda y=eight(): m.cummax(y[1:], 0, out=(y[:-1], longs(7))),
        # ops that read while they write: any overlap refused
        "cat full": lambda y=eight(): m.cat([y[:4], y[4:]], out=y),
        "stack": lambda y=eight(): m.stack([y[:2], y[2:4]], out=y[:4]),
        "hstack": lambda y=eight(): m.hstack([y[:2], y[2:4]], out=y[:4]),
        "gather": lambda y=eight(): m.gather(y, 0, index(0, 1, 2), out=y[:3]),
        "index_select full": lambda y=eight(): m.index_select(y, 0, m.arange(8), out=y),
        "index_select out=index": lambda i=index(0, 1, 2): m.index_select(
            m.arange(6), 0, i, out=i),
        "take": lambda y=eight(): m.take(y, index(0, 1), out=y[:2]),
        "take_along_dim": lambda y=eight(): m.take_along_dim(y, index(0, 1), out=y[:2]),
        "masked_select": lambda y=eight(): m.masked_select(y, y > 2, out=y[:5]),
        "kthvalue": lambda y=eight(): m.kthvalue(y, 2, out=(y[0], m.zeros((), dtype=m.int64))),
        "topk": lambda y=eight(): m.topk(y, 2, out=(y[:2], longs(2))),
        "median dim": lambda y=eight(): m.median(y.view(2, 4), 1, out=(y[:2], longs(2))),
        "index_add full": lambda y=eight(): m.index_add(y, 0, index(0), y[:1], out=y),
        "index_copy full": lambda y=eight(): m.index_copy(y, 0, index(0), y[:1], out=y),
        "scatter full": lambda y=eight(): m.scatter(y, 0, index(0), y[:1], out=y),
        "scatter_add full": lambda y=eight(): m.scatter_add(y, 0, index(0), y[:1], out=y),
        # an expanded out=
        "add out expanded": lambda: m.add(m.ones(3), 1, out=m.zeros(1).expand(3)),
        "abs out expanded": lambda: m.abs(m.ones(3), out=m.zeros(1).expand(3)),
        "mm out expanded": lambda: m.mm(m.ones(2, 2), m.ones(2, 2),
                                        out=m.zeros(1, 1).expand(2, 2)),
        "sort out expanded": lambda: m.sort(m.ones(2), out=(m.zeros(1).expand(2), longs(2))),
        "cat out expanded": lambda: m.cat([m.ones(2)], out=m.zeros(1).expand(2)),
    }


def _out_outcome(call):
    try:
        call()
    except RuntimeError as error:
        text = str(error)
        if "more than one element of the written-to tensor refers to a single memory" in text:
            return "internal overlap"
        if "some elements of the input tensor and the written-to tensor refer" in text:
            return "overlap"
        raise
    return "ok"


@pytest.mark.parametrize("case", list(_out_cases(torch)))
def test_out_overlap_is_refused_where_torch_refuses_it(case):
    theirs = _out_outcome(_out_cases(torch)[case])
    ours = _out_outcome(_out_cases(tinyattn)[case])
    assert ours == theirs


def test_out_overlap_cases_hold_both_outcomes():
    """Negative control: the table above has accepted and refused cases of each kind."""
    outcomes = [_out_outcome(call) for call in _out_cases(torch).values()]
    assert {"ok", "overlap", "internal overlap"} <= set(outcomes)


def test_a_full_overlap_of_an_elementwise_op_computes_as_torch():
    ours, theirs = tinyattn.arange(6.), torch.arange(6.)
    tinyattn.mul(ours, ours, out=ours)
    torch.mul(theirs, theirs, out=theirs)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_a_reduction_into_an_expanded_out_is_refused_with_a_clear_error():
    """torch computes it (several results land in one element, the last stays); tinyattn
    refuses it with an error saying so, not NumPy's 'assignment destination is read-only'."""
    torch.sum(torch.ones(2, 3), 1, out=torch.zeros(1).expand(2))      # torch: computes
    with pytest.raises(RuntimeError, match="expanded tensor, so several results"):
        tinyattn.sum(tinyattn.ones(2, 3), 1, out=tinyattn.zeros(1).expand(2))
    out = tinyattn.zeros(2)
    tinyattn.sum(tinyattn.ones(2, 3), 1, out=out)                      # its own memory: fine
    assert out.tolist() == [3.0, 3.0]
