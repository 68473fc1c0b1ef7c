"""What backward saves, against torch: after an op, an in-place write to one of its inputs
(or to its output) must make the backward raise "modified by an inplace operation" in
tinyattn exactly when it raises in torch (torch keeps what its derivatives.yaml names; a
write to anything else must not break a valid program). Issue 30's saves rows; the
conformance run (tests/conformance) checks the same on op_db's samples, these cases name
the programs that differed, each one failing before its fix."""
from __future__ import annotations

from typing import Any, Callable, List, Optional

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="these cases compare with torch")


def _make(framework: Any, value: Any, grad: bool) -> Any:
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and grad:
        leaf = (torch.tensor(value, requires_grad=True) if framework is torch
                else ta.tensor(value, requires_grad=True))
        return leaf * 1                  # a leaf that requires grad cannot be written to
    if isinstance(value, np.ndarray):
        return torch.tensor(value) if framework is torch else ta.tensor(value)
    return value


def _raises(framework: Any, op: Callable[..., Any], values: List[Any], target: Any,
            grad: Optional[List[bool]] = None) -> bool:
    """Does the backward raise after an in-place write to ``target`` (an input's position
    or "out")?"""
    grad = grad or [True] * len(values)
    tensors = [_make(framework, v, g) for v, g in zip(values, grad)]
    out = op(framework, *tensors)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    written = outs[int(target[3:] or 0)] if isinstance(target, str) else tensors[target]
    if written.dtype in (torch.bool, ta.bool):
        written.copy_(written.clone())
    else:
        written.mul_(1)
    loss = sum((o * 1.0).sum() for o in outs if o.requires_grad)
    try:
        loss.backward()
    except RuntimeError as exc:
        if "modified by an inplace operation" in str(exc):
            return True
        raise
    return False


def _agree(op: Callable[..., Any], values: List[Any], targets: List[Any],
           grad: Optional[List[bool]] = None) -> List[str]:
    differences = []
    for target in targets:
        want = _raises(torch, op, values, target, grad)
        got = _raises(ta, op, values, target, grad)
        if want != got:
            differences.append(f"write to {target}: torch {'raises' if want else 'runs'}, "
                               f"tinyattn {'raises' if got else 'runs'}")
    return differences


_rng = np.random.default_rng(0)


def _randn(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape)


def test_the_comparison_can_fail():
    """Negative control: an op that keeps its input (exp keeps its output, mul its inputs)
    against one that keeps nothing is told apart."""
    def keeps(framework, x):
        return x * x if framework is torch else x + x
    assert _agree(keeps, [_randn(3)], [0]) == ["write to 0: torch raises, tinyattn runs"]


EINSUM_CASES = [("ij,jk->ik", [(2, 3), (3, 4)]), ("i->", [(3,)]), ("ij->i", [(2, 3)]),
                ("ii->i", [(3, 3)]), ("ik,j->ij", [(2, 3), (4,)]),
                ("...ik,...j->ij", [(1, 2, 3), (3,)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
                ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("i,i->i", [(1,), (3,)])]


@pytest.mark.parametrize("equation, shapes", EINSUM_CASES)
def test_einsum_keeps_what_torchs_products_keep(equation, shapes):
    values = [_randn(*s) for s in shapes]
    op = lambda fw, *ts: fw.einsum(equation, *ts)     # noqa: E731
    assert _agree(op, values, list(range(len(shapes))) + ["out"]) == []


_IDS = np.array([[0, 2], [1, 0]])


def _index_ops():
    """(name, op, values, targets, grad): ops that keep an index tensor (or mask) that
    reaches them beside their differentiable inputs."""
    x, src = _randn(3, 2), _randn(2, 2)
    mask = np.array([[True, False], [False, True], [True, True]])
    flat = np.array([0, 2, 5])
    return [
        ("gather", lambda fw, x, i: fw.gather(x, 0, i), [x, _IDS], [0, 1, "out"]),
        ("scatter", lambda fw, x, i, s: fw.scatter(x, 0, i, s), [x, _IDS, src],
         [0, 1, 2, "out"]),
        ("scatter value", lambda fw, x, i: fw.scatter(x, 0, i, 1.5), [x, _IDS], [0, 1]),
        ("scatter_add", lambda fw, x, i, s: fw.scatter_add(x, 0, i, s), [x, _IDS, src],
         [0, 1, 2, "out"]),
        *[(f"scatter_reduce {r}", lambda fw, x, i, s, r=r: fw.scatter_reduce(x, 0, i, s, r),
           [x, _IDS, src], [0, 1, 2, "out"]) for r in ("sum", "prod", "mean", "amax")],
        ("index_select", lambda fw, x, i: fw.index_select(x, 0, i), [x, np.array([2, 0])],
         [0, 1, "out"]),
        ("index_fill", lambda fw, x, i: fw.index_fill(x, 0, i, -1.0), [x, np.array([1])],
         [0, 1, "out"]),
        ("index_add", lambda fw, x, i, s: fw.index_add(x, 0, i, s), [x, np.array([2, 0]),
                                                                      src], [0, 1, 2, "out"]),
        *[(f"index_reduce {r}", lambda fw, x, i, s, r=r: fw.index_reduce(x, 0, i, s, r),
           [x, np.array([2, 0]), src], [0, 1, 2, "out"]) for r in ("prod", "mean", "amin")],
        ("take", lambda fw, x, i: fw.take(x, i), [x, flat], [0, 1, "out"]),
        ("where", lambda fw, c, x, y: fw.where(c, x, y), [mask, x, _randn(3, 2)],
         [0, 1, 2, "out"]),
        ("masked_fill", lambda fw, x, m: x.masked_fill(m, 0.5), [x, mask], [0, 1, "out"]),
        ("embedding", lambda fw, i, w: fw.nn.functional.embedding(i, w), [_IDS, x],
         [0, 1, "out"]),
    ]


@pytest.mark.parametrize("name, op, values, targets", _index_ops(),
                         ids=[case[0] for case in _index_ops()])
def test_an_index_or_mask_is_kept_as_torch_keeps_it(name, op, values, targets):
    assert _agree(op, values, targets) == []


def test_keeping_an_index_costs_no_copy_and_names_it():
    x = ta.tensor(_randn(3, 2), requires_grad=True) * 1
    index = ta.tensor(_IDS)
    out = ta.gather(x, 0, index)
    index.add_(0)
    with pytest.raises(RuntimeError, match="keeps beside its inputs"):
        out.sum().backward()


_SDPA_CASES = [("3-D: matmuls keep v", (2, 3, 8), (2, 6, 8), {}),
               ("4-D: the fused kernel keeps q, k, v, out", (2, 2, 3, 8), (2, 2, 6, 8), {}),
               ("4-D causal", (2, 2, 3, 8), (2, 2, 6, 8), {"is_causal": True}),
               ("4-D, k and v broadcast: copies", (2, 2, 3, 8), (1, 2, 6, 8), {}),
               ("4-D with dropout: matmuls", (2, 2, 3, 8), (2, 2, 6, 8), {"dropout_p": 0.5}),
               ("2-D", (3, 8), (6, 8), {})]


@pytest.mark.parametrize("name, q_shape, kv_shape, options", _SDPA_CASES,
                         ids=[case[0] for case in _SDPA_CASES])
def test_attention_keeps_what_torchs_cpu_attention_keeps(name, q_shape, kv_shape, options):
    values = [_randn(*q_shape), _randn(*kv_shape), _randn(*kv_shape)]
    op = lambda fw, q, k, v: fw.nn.functional.scaled_dot_product_attention(  # noqa: E731
        q, k, v, **options)
    assert _agree(op, values, [0, 1, 2, "out"]) == []


def test_attention_with_a_float_mask_that_needs_a_gradient_scales_q_and_k_as_torch():
    values = [_randn(2, 2, 3, 8), _randn(2, 2, 6, 8), _randn(2, 2, 6, 8), _randn(3, 6)]
    op = lambda fw, q, k, v, m: fw.nn.functional.scaled_dot_product_attention(  # noqa: E731
        q, k, v, attn_mask=m)
    assert _agree(op, values, [0, 1, 2, 3, "out"]) == []


_PICKS = [("kthvalue", lambda fw, x: fw.kthvalue(x, 2, 1)),
          ("median", lambda fw, x: fw.median(x, 1)),
          ("nanmedian", lambda fw, x: fw.nanmedian(x, 1)), ("nanmedian all", lambda fw, x:
                                                            fw.nanmedian(x)),
          ("cummax", lambda fw, x: fw.cummax(x, 1)), ("cummax 0-d", lambda fw, x:
                                                      fw.cummax(x.sum(), 0))]


@pytest.mark.parametrize("name, op", _PICKS, ids=[case[0] for case in _PICKS])
def test_ops_that_pick_elements_keep_their_indices_as_torch(name, op):
    """kthvalue/median along a dim keep the indices only: a write to the input after the op
    is allowed (it raised here), a write to the indices is not."""
    targets = [0, "out0"] + (["out1"] if name not in ("nanmedian all",) else [])
    assert _agree(op, [_randn(4, 5)], targets) == []


_F = "nn.functional"
_POINTWISE = [
    ("fmod", lambda fw, a, b: fw.fmod(a, b), 2),
    ("remainder", lambda fw, a, b: fw.remainder(a, b), 2),
    ("softsign", lambda fw, x: fw.nn.functional.softsign(x), 1),
    ("nan_to_num", lambda fw, x: fw.nan_to_num(x), 1),
    ("sgn", lambda fw, x: fw.sgn(x), 1),
    ("sign", lambda fw, x: fw.sign(x), 1),
    ("pow 0-d", lambda fw, a, b: fw.pow(a.sum().abs(), b.sum()), 2),
    ("huber_loss", lambda fw, a, b: fw.nn.functional.huber_loss(a, b), 2),
    ("smooth_l1_loss", lambda fw, a, b: fw.nn.functional.smooth_l1_loss(a, b), 2),
    ("smooth_l1_loss beta=0", lambda fw, a, b: fw.nn.functional.smooth_l1_loss(a, b, beta=0.0),
     2),
    ("pad reflect", lambda fw, x: fw.nn.functional.pad(x, (1, 2), mode="reflect"), 1),
    ("pad replicate", lambda fw, x: fw.nn.functional.pad(x, (1, 2), mode="replicate"), 1),
    ("pad circular", lambda fw, x: fw.nn.functional.pad(x, (1, 2), mode="circular"), 1),
    ("pad constant", lambda fw, x: fw.nn.functional.pad(x, (1, 2)), 1),
    ("layer_norm", lambda fw, x, w, b: fw.nn.functional.layer_norm(x, (4,), w, b), 3),
    ("rms_norm", lambda fw, x, w: fw.nn.functional.rms_norm(x, (4,), w), 2),
    ("rms_norm without weight", lambda fw, x: fw.nn.functional.rms_norm(x, (4,)), 1),
]


@pytest.mark.parametrize("name, op, count", _POINTWISE, ids=[case[0] for case in _POINTWISE])
def test_pointwise_losses_pads_and_norms_keep_what_torch_keeps(name, op, count):
    shapes = [(3, 4), (4,), (4,)] if name == "layer_norm" else [(3, 4), (4,)] \
        if name == "rms_norm" else [(3, 4)] * count
    values = [_randn(*s) + 3.0 for s in shapes]        # away from fmod's jumps
    assert _agree(op, values, list(range(count)) + ["out"]) == []


_TARGET = np.array([0, 3, 1])
_LOSSES = [
    ("cross_entropy", lambda fw, x, t: fw.nn.functional.cross_entropy(x, t), [_randn(3, 4),
                                                                               _TARGET]),
    ("nll_loss", lambda fw, x, t: fw.nn.functional.nll_loss(x, t), [_randn(3, 4), _TARGET]),
    ("nll_loss none", lambda fw, x, t: fw.nn.functional.nll_loss(x, t, reduction="none"),
     [_randn(3, 4), _TARGET]),
]


@pytest.mark.parametrize("name, op, values", _LOSSES, ids=[case[0] for case in _LOSSES])
def test_class_losses_keep_the_target_as_torch(name, op, values):
    assert _agree(op, values, [0, 1, "out"]) == []


@pytest.mark.parametrize("numerator", [2.0, "tensor"])
def test_a_number_or_tensor_over_a_tensor_keeps_the_reciprocal_as_torch(numerator):
    """torch's Tensor.__rdiv__ is reciprocal(x) * other: x itself is not kept."""
    def op(fw, x, *rest):
        return (rest[0] if rest else numerator) / x
    values = [_randn(3) + 3.0] + ([_randn(3)] if numerator == "tensor" else [])
    assert _agree(op, values, list(range(len(values))) + ["out"]) == []
    x = ta.tensor([3.0, 7.0])
    np.testing.assert_array_equal((2.0 / x).numpy(), (2.0 * (1 / np.float32([3, 7]))))


@pytest.mark.parametrize("shapes", [((2, 3), (4, 5)), ((3,), (4,)), ((2, 2, 2), (3,))])
def test_kron_keeps_copies_as_torch(shapes):
    values = [_randn(*s) for s in shapes]
    assert _agree(lambda fw, a, b: fw.kron(a, b), values, [0, 1, "out"]) == []


def test_slogdet_keeps_its_sign_not_its_log_abs_det_as_torch():
    a = _randn(4, 4) + 4 * np.eye(4)
    op = lambda fw, m: tuple(fw.linalg.slogdet(m))      # noqa: E731
    assert _agree(op, [a], [0, "out0", "out1"]) == []


def test_compositions_keep_their_inputs_as_torchs_single_nodes():
    """dist and soft_margin_loss are built of several ops here, one node in torch."""
    values = [_randn(3, 4), _randn(3, 4)]
    assert _agree(lambda fw, a, b: fw.dist(a, b), values, [0, 1, "out"]) == []
    target = np.sign(_randn(3, 4))
    assert _agree(lambda fw, a, t: fw.nn.functional.soft_margin_loss(a, t),
                  [values[0], target], [0, 1, "out"], grad=[True, False]) == []
