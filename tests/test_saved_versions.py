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


# ------------------------------------------------------------------ saves43
_F64, _F32, _I32 = np.float64, np.float32, np.int32


def _w(*values: float, dtype: Any = _F32) -> np.ndarray:
    return np.array(values, dtype=dtype)


_CONVERTED = [
    ("x * int32 w", lambda fw, x, w: x * w, [_randn(3), _w(1, 2, 3, dtype=_I32)], None),
    ("x * float32 w", lambda fw, x, w: x * w, [_randn(3), _w(1, 2, 3)], None),
    ("x * float32 w, w needs grad", lambda fw, x, w: x * w, [_randn(3), _w(1, 2, 3)],
     [True, True]),
    ("x / float32 w", lambda fw, x, w: x / w, [_randn(3), _w(1, 2, 3)], None),
    ("cov fweights", lambda fw, x, f: fw.cov(x, fweights=f), [_randn(2, 3), _w(1, 2, 1,
                                                                           dtype=_I32)],
     None),
    ("cov aweights", lambda fw, x, a: fw.cov(x, aweights=a), [_randn(2, 3), _w(.5, 1, 2)],
     [True, True]),
    ("cov both", lambda fw, x, f, a: fw.cov(x, correction=0, fweights=f, aweights=a),
     [_randn(2, 3), _w(1, 2, 1, dtype=_I32), _w(.5, 1, 2)], [True, False, True]),
    ("float32 y.mul_(float64 x)", lambda fw, y, x: y.mul_(x), [_w(1, 2, 3), _randn(3)],
     [False, True]),
    ("float32 y.mul_(float64 x), y needs grad", lambda fw, y, x: y.mul_(x),
     [_w(1, 2, 3), _randn(3)], [True, True]),
]


@pytest.mark.parametrize("name, op, values, grad", _CONVERTED,
                         ids=[case[0] for case in _CONVERTED])
def test_an_operand_converted_to_the_result_dtype_is_kept_as_torch_keeps_it(name, op, values,
                                                                            grad):
    """torch's mul of float64 x and an int32 or float32 w saves w itself; tinyattn
    multiplies by a float64 copy of w, which now carries w's version (converted_copy)."""
    assert _agree(op, values, list(range(len(values))) + ["out"], grad) == []


def test_the_converted_copy_of_an_in_place_target_does_not_make_backward_raise():
    """y.mul_(x) (float32 y, float64 x) keeps a converted copy of y's old values, as torch
    keeps a copy: the write into y that the op itself makes must not spoil its backward."""
    x = ta.tensor([1.0, 2.0], dtype=ta.float64, requires_grad=True)
    y = ta.tensor([3.0, 4.0])
    y.mul_(x)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


_EMPTY = np.zeros((2, 0), dtype=np.int64)
_SAVES43_INDEX = [
    ("masked_fill 0-d tensor value", lambda fw, x, m, v: x.masked_fill(m, v),
     [_randn(3, 2), np.array([[True, False], [False, True], [True, True]]),
      np.array(0.5)], None),
    ("gather empty index", lambda fw, x, i: fw.gather(x, 0, i), [_randn(5), _EMPTY[0]], None),
    ("gather empty 2-d index", lambda fw, x, i: fw.gather(x, 0, i), [_randn(5), _EMPTY],
     None),
    ("take empty index", lambda fw, x, i: fw.take(x, i), [_randn(3, 2), _EMPTY[0]], None),
    ("take empty index, 0-d input", lambda fw, x, i: fw.take(x, i), [np.array(1.5),
                                                                     _EMPTY[0]], None),
    *[(f"put accumulate={acc} grad={g}",
       lambda fw, x, i, s, acc=acc: fw.put(x, i, s, acc),
       [_randn(3, 3), np.array([0, 4, 8]), _randn(3)], g)
      for acc in (False, True) for g in ([True, False, True], [True, False, False],
                                         [False, False, True])],
    ("x[int64 tensor]", lambda fw, x, i: x[i], [_randn(5, 4), np.array([1, 3])], None),
    ("x[int32 tensor]", lambda fw, x, i: x[i], [_randn(5, 4), np.array([1, 3], dtype=_I32)],
     None),
    ("x[bool mask]", lambda fw, x, m: x[m], [_randn(5, 4), np.array([1, 0, 1, 1, 0], bool)],
     None),
    ("x[:, int64 tensor]", lambda fw, x, i: x[:, i], [_randn(5, 4), np.array([0, 2])], None),
    ("x[0-d tensor, int64 tensor]", lambda fw, x, i, j: x[i, j],
     [_randn(5, 4), np.array(2), np.array([0, 2])], None),
    ("x[0-d tensor]", lambda fw, x, i: x[i], [_randn(5, 4), np.array(2)], None),
    ("x[empty int64 tensor]", lambda fw, x, i: x[i], [_randn(5, 4), _EMPTY[0]], None),
]


@pytest.mark.parametrize("name, op, values, grad", _SAVES43_INDEX,
                         ids=[case[0] for case in _SAVES43_INDEX])
def test_indices_masks_and_sources_are_kept_as_torch_keeps_them(name, op, values, grad):
    assert _agree(op, values, list(range(len(values))) + ["out"], grad) == []


_TENSORDOT = [((2, 2, 1), (2, 1, 2), ([0, 1], [2, 0])), ((2, 3), (2, 3), ([0, 1], [0, 1])),
              ((2, 3), (3, 2), ([0, 1], [1, 0])), ((3, 1), (1, 3), ([0], [1])),
              ((2, 3, 4), (3, 4, 5), 2), ((2, 3, 4), (4, 3, 2), ([1, 2], [1, 0]))]


@pytest.mark.parametrize("grad", [[True, True], [True, False], [False, True]])
@pytest.mark.parametrize("a, b, dims", _TENSORDOT)
def test_tensordot_keeps_what_torchs_dot_mul_or_mm_keeps(a, b, dims, grad):
    """One output element: torch multiplies views of both inputs (no copy), so a write to
    the input the other's gradient needs raises even where a reshape would have copied."""
    op = lambda fw, x, y: fw.tensordot(x, y, dims)      # noqa: E731
    assert _agree(op, [_randn(*a), _randn(*b)], [0, 1, "out"], grad) == []


@pytest.mark.parametrize("n", [-1, -2, 1, 2])
def test_matrix_power_minus_one_is_the_inverse_torch_keeps(n):
    a = _randn(2, 3, 3) + 3 * np.eye(3)
    op = lambda fw, m: fw.linalg.matrix_power(m, n)     # noqa: E731
    assert _agree(op, [a], [0, "out"]) == []


@pytest.mark.parametrize("grad", [[True, True], [True, False], [False, True]])
@pytest.mark.parametrize("reduction", ["none", "sum", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_checks_what_torchs_composition_keeps(log_target, reduction, grad):
    """torch: xlogy(t, t) - t * x keeps t (and x when t needs a gradient); with log
    targets exp(t) * (t - x) keeps neither."""
    x = np.log(_rng.dirichlet(np.ones(4), size=3))
    t = _rng.dirichlet(np.ones(4), size=3)
    t = np.log(t) if log_target else t
    op = lambda fw, a, b: fw.nn.functional.kl_div(a, b, reduction=reduction,  # noqa: E731
                                                  log_target=log_target)
    assert _agree(op, [x, t], [0, 1, "out"], grad) == []


_INF = float("inf")


@pytest.mark.parametrize("shape", [(0, 0), (5, 0), (0, 5), (3, 4)])
@pytest.mark.parametrize("ord", ["nuc", "fro", 1, -1, _INF, -_INF, 2])
def test_matrix_norms_of_empty_matrices_keep_what_torch_keeps(shape, ord):
    """torch's nuclear norm of no entries sums no singular values (its SVD keeps only its
    outputs); its 1 / inf norms take a max / min that keeps its result."""
    x = _randn(*shape)
    op = lambda fw, m: fw.linalg.matrix_norm(m, ord)    # noqa: E731
    try:
        torch.linalg.matrix_norm(torch.tensor(x, requires_grad=True), ord).sum().backward()
    except (RuntimeError, IndexError):   # amin over no elements; amax's 0 has no grad_fn
        pytest.skip("torch refuses this norm's backward (a max or min over no elements)")
    assert _agree(op, [x], [0, "out"]) == []


def test_unfold_windows_that_do_not_overlap_agree_and_overlapping_ones_refuse_writes():
    """Non-overlapping windows: the write goes through as in torch. Overlapping windows
    (step < size) are read-only in tinyattn: torch runs an in-place op there once per window
    an element is in (undefined behaviour by its docs), a difference tinyattn refuses loudly
    rather than compute silently otherwise."""
    op = lambda fw, x: x.unfold(0, 2, 2)       # noqa: E731
    assert _agree(op, [_randn(6, 3)], [0, "out"]) == []
    windows = (ta.tensor(_randn(6, 3), requires_grad=True) * 1).unfold(0, 3, 1)
    with pytest.raises(RuntimeError, match="read-only"):
        windows.mul_(2)
