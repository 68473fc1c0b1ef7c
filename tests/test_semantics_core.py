"""PyTorch semantics of the core: grad as a Tensor, in-place ops and version counters, the
constructors, PyTorch's indexing rule, 0-d tensors, integer dtypes, custom Functions, threads.

Each test names the divergence it pins (issues "PyTorch semantics" and "Reliability"); each
failed before the core redesign."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn, optim


def _torch():
    return pytest.importorskip("torch")


# ---------------------------------------------------------------- pow, 0-d, integer dtypes
def test_pow_zero_has_zero_gradient_even_at_zero():
    x = ta.tensor([0.0, 2.0], dtype="float64", requires_grad=True)
    (x ** 0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])      # was [nan, 0]


def test_pow_zero_passes_gradcheck():
    x = ta.tensor([0.0, 0.5, -1.5], dtype="float64", requires_grad=True)
    assert ta.gradcheck(lambda t: t ** 0 + t ** 2, [x])


@pytest.mark.parametrize("call, expected_shape", [
    (lambda s: s.sum(0), ()), (lambda s: s.sum(-1), ()), (lambda s: s.mean(0), ()),
    (lambda s: s.amax(0), ()), (lambda s: F.softmax(s, dim=0), ()),
    (lambda s: F.log_softmax(s, dim=-1), ()), (lambda s: s.squeeze(0), ()),
    (lambda s: s.flatten(), (1,)), (lambda s: s.max(0).values, ()),
])
def test_zero_dim_tensors_accept_dim_0_as_pytorch(call, expected_shape):
    s = ta.tensor(1.5, dtype="float64", requires_grad=True)
    out = call(s)
    assert out.shape == expected_shape
    out.sum().backward()
    assert s.grad.shape == ()


def test_zero_dim_softmax_values_match_torch():
    torch = _torch()
    s = ta.tensor(0.3)
    assert F.softmax(s, dim=0).item() == torch.softmax(torch.tensor(0.3), dim=0).item() == 1.0
    with pytest.raises(IndexError, match="out of range"):
        s.sum(1)


@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "tanh"])
def test_integer_tensors_through_float_ops_give_float32(op):
    x = ta.tensor([1, 2, 3])
    assert x.dtype == np.int64
    out = getattr(ta, op)(x)
    assert out.dtype == np.float32                          # was float64
    np.testing.assert_allclose(out.numpy(), getattr(np, op)([1.0, 2.0, 3.0]), rtol=1e-6)


def test_integer_powers_follow_torch():
    x = ta.tensor([1, 2, 3])
    assert (x ** 2).dtype == np.int64 and (x ** 2).tolist() == [1, 4, 9]
    assert (x ** 0.5).dtype == np.float32                   # was float64
    with pytest.raises(ValueError, match="negative integer powers"):
        x ** -1


# ---------------------------------------------------------------- indexing
@pytest.mark.parametrize("index", [
    (0, slice(None), [0, 2]), (slice(None), 1, [0, 3]), ([1, 0], slice(None), 2),
    (Ellipsis, 1, [0, 2]), (1, [0, 2], slice(1, 3)), (0, [1, 2], [0, 3]),
    (slice(None), [0, 2], 1), (0, slice(None), np.array([[0, 1], [2, 3]])),
])
def test_mixed_int_and_list_indexing_uses_pytorchs_layout(index):
    torch = _torch()
    data = np.arange(24.0).reshape(2, 3, 4)
    ours = ta.tensor(data, requires_grad=True)
    theirs = torch.tensor(data, requires_grad=True)
    t_index = tuple(torch.tensor(i) if isinstance(i, (list, np.ndarray)) else i for i in index)
    out, ref = ours[index], theirs[t_index]
    assert out.shape == tuple(ref.shape)
    np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())
    weights = np.random.default_rng(0).standard_normal(out.shape)
    (out * ta.tensor(weights)).sum().backward()
    (ref * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-12)


def test_issue_example_shape():
    x = ta.tensor(np.arange(24.0).reshape(2, 3, 4))
    assert x[0, :, [0, 2]].shape == (3, 2)                  # NumPy would give (2, 3)


def test_setitem_with_mixed_index_writes_where_pytorch_does():
    torch = _torch()
    ours, theirs = ta.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    value = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    ours[0, :, [0, 2]] = ta.tensor(value)
    theirs[0, :, [0, 2]] = torch.tensor(value)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ---------------------------------------------------------------- constructors
def test_tensor_constructor_takes_sizes_like_pytorch():
    t = ta.Tensor(2, 3)
    assert t.shape == (2, 3) and t.dtype == np.float32 and not t.requires_grad  # was (2,)
    assert ta.Tensor(4).shape == (4,)
    assert ta.Tensor().shape == (0,)
    assert ta.Tensor([1, 2]).dtype == np.float32        # PyTorch's legacy constructor
    with pytest.raises(TypeError):
        ta.Tensor(2, 3, True)          # requires_grad is keyword-only


def test_tensor_and_tensor_function_copy_from_numpy_and_as_tensor_shares():
    array = np.zeros(3, dtype=np.float32)
    for made in (ta.Tensor(array), ta.tensor(array)):
        array[0] = 5.0
        assert made.numpy()[0] == 0.0                        # a copy, as in PyTorch
        array[0] = 0.0
    shared = ta.from_numpy(array)
    assert ta.as_tensor(array).numpy() is not None
    array[1] = 7.0
    assert shared.numpy()[1] == 7.0 and ta.as_tensor(array).numpy()[1] == 7.0


# ---------------------------------------------------------------- .grad is a Tensor
def test_grad_is_a_tensor_with_pytorch_habits():
    w = ta.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (w * w).sum().backward()
    assert isinstance(w.grad, ta.Tensor) and not w.grad.requires_grad
    np.testing.assert_allclose((w.grad * 0.5).numpy(), [1.0, -2.0, 3.0])
    w.grad.zero_()
    assert w.grad.tolist() == [0.0, 0.0, 0.0]
    w.grad = None
    assert w.grad is None


@pytest.mark.parametrize("bad", [0.0, np.ones(3), [1.0, 2.0, 3.0]])
def test_assigning_a_non_tensor_grad_is_refused(bad):
    p = nn.Parameter(np.ones(3, dtype=np.float32))
    with pytest.raises(TypeError, match="grad must be a Tensor or None"):
        p.grad = bad


def test_assigned_grad_must_match_shape_and_dtype():
    p = nn.Parameter(np.ones(3, dtype=np.float32))
    with pytest.raises(RuntimeError, match="shape"):
        p.grad = ta.zeros(2)
    with pytest.raises(TypeError, match="float64"):
        p.grad = ta.zeros(3, dtype="float64")


def test_manual_sgd_under_no_grad_updates_the_parameter_itself():
    model = nn.Linear(3, 1)
    w = model.weight
    before = w.numpy().copy()
    model(ta.ones(2, 3)).sum().backward()
    with ta.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad                       # was: rebinding p, the model untouched
    assert model.weight is w and w.requires_grad and w.is_leaf
    np.testing.assert_allclose(w.numpy(), before - 0.1 * w.grad.numpy(), rtol=1e-6)


def test_in_place_update_of_a_parameter_while_recording_is_refused():
    model = nn.Linear(3, 1)
    model(ta.ones(2, 3)).sum().backward()
    p = next(model.parameters())
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        p -= 0.1 * p.grad                           # was: silently nothing


def test_zero_dim_parameters_train_like_torch_with_momentum_and_clipping():
    """A 0-d version of PyTorch's polynomial example: a + b x + c x^2 + d x^3."""
    torch = _torch()
    x = np.linspace(-np.pi, np.pi, 200)
    y = np.sin(x)
    start = [0.1, -0.2, 0.05, 0.01]
    ours = [nn.Parameter(np.asarray(v, dtype=np.float64)) for v in start]
    theirs = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in start]
    opt = optim.SGD(ours, lr=1e-6, momentum=0.9)
    t_opt = torch.optim.SGD(theirs, lr=1e-6, momentum=0.9)
    xs, ys = ta.tensor(x), ta.tensor(y)
    tx, ty = torch.tensor(x), torch.tensor(y)
    for _ in range(50):
        a, b, c, d = ours
        loss = ((a + b * xs + c * xs ** 2 + d * xs ** 3 - ys) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        optim.clip_grad_norm_(ours, 100.0)
        opt.step()
        a, b, c, d = theirs
        t_loss = ((a + b * tx + c * tx ** 2 + d * tx ** 3 - ty) ** 2).sum()
        t_opt.zero_grad()
        t_loss.backward()
        torch.nn.utils.clip_grad_norm_(theirs, 100.0)
        t_opt.step()
    assert all(p.grad.shape == () and p.shape == () for p in ours)
    np.testing.assert_allclose([p.item() for p in ours], [t.item() for t in theirs],
                               rtol=1e-9)


# ---------------------------------------------------------------- version counters
def test_optimizer_step_between_forward_and_retained_second_backward_raises():
    # the weight is saved only for the input's gradient (as torch's addmm): with an input
    # that needs one, the step's in-place update makes the second backward raise; with one
    # that needs none, nothing saved changed and it runs (torch: the same, both ways)
    for needs_grad in (True, False):
        model = nn.Linear(3, 2).double()
        opt = optim.SGD(model.parameters(), lr=0.1)
        x = ta.ones(4, 3, dtype="float64", requires_grad=needs_grad)
        loss = model(x).pow(2).sum()
        loss.backward(retain_graph=True)
        opt.step()
        if needs_grad:
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                loss.backward()
        else:
            loss.backward()


def test_writing_into_data_saved_for_backward_is_refused_in_anomaly_mode():
    a = ta.tensor([0.5, 1.0, 2.0], requires_grad=True)
    b = a.exp()
    with ta.autograd.set_detect_anomaly(True):      # opt-in: torch writes silently
        with pytest.raises(ta.SavedDataWriteError, match="saved for the backward"):
            b.data[...] = 0
        with pytest.raises(ta.SavedDataWriteError):
            b.data += 1
    assert not ta.autograd.is_anomaly_enabled()
    b.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.exp([0.5, 1.0, 2.0]), rtol=1e-6)
    b.data[...] = 0                                      # after the backward: allowed
    assert b.tolist() == [0.0, 0.0, 0.0]


def test_in_place_change_of_a_saved_output_raises_like_pytorch():
    a = ta.tensor([0.5, 1.0], requires_grad=True)
    b = a.exp()
    b.add_(1)
    with pytest.raises(RuntimeError, match="output of Exp is at version 1"):
        b.sum().backward()


def test_detached_alias_shares_the_version_counter():
    a = ta.tensor([0.5, 1.0], requires_grad=True)
    b = a * a
    with ta.no_grad():
        a.detach()[0] = 3.0                 # writes a's memory through a view
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_reused_id_buffer_after_embedding_keeps_the_right_gradient():
    weight = ta.tensor(np.eye(4), requires_grad=True)
    ids = np.array([0, 1, 1])
    out = F.embedding(ids, weight)
    ids[:] = 3                                           # the caller reuses the buffer
    out.sum().backward()
    np.testing.assert_array_equal(weight.grad.numpy()[:, 0], [1.0, 2.0, 0.0, 0.0])


def test_reused_index_and_mask_buffers_keep_the_right_gradient():
    x = ta.tensor(np.arange(4.0), requires_grad=True)
    index = np.array([0, 0, 2])
    mask = np.array([True, False, False, True])
    y = x[index].sum() + F.masked_fill(x, mask, 0.0).sum()
    index[:] = 3
    mask[:] = False
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 1.0, 2.0, 0.0])


def test_mul_by_a_constant_then_in_place_does_not_need_the_old_values():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3.0
    h.mul_(2.0)                                  # Mul kept only the constant, not h's input
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])


# ---------------------------------------------------------------- in place while recording
def test_in_place_add_on_an_intermediate_differentiates_like_out_of_place():
    rng = np.random.default_rng(0)
    xa, wa, ba = rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal(2)
    grads = []
    for in_place in (True, False):
        x, w, b = (ta.tensor(a, requires_grad=True) for a in (xa, wa, ba))
        h = x @ w
        used_before = h * 2.0               # an op that used the old h
        if in_place:
            h += b
        else:
            h = h + b
        (h.tanh().sum() + used_before.sum()).backward()
        grads.append([t.grad.numpy() for t in (x, w, b)])
    for ours, ref in zip(*grads):
        np.testing.assert_allclose(ours, ref, atol=1e-12)


def test_setitem_while_recording_matches_torch():
    torch = _torch()
    rng = np.random.default_rng(1)
    base, value = rng.standard_normal((3, 4)), rng.standard_normal(4)
    x, v = ta.tensor(base, requires_grad=True), ta.tensor(value, requires_grad=True)
    tx, tv = torch.tensor(base, requires_grad=True), torch.tensor(value, requires_grad=True)
    h, th = x * 1.0, tx * 1.0
    h[1] = v * 2.0
    th[1] = tv * 2.0
    weights = rng.standard_normal((3, 4))
    (h * ta.tensor(weights)).sum().backward()
    (th * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(h.detach().numpy(), th.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), atol=1e-12)


def test_setitem_gradcheck():
    def fn(x, v):
        out = x * 1.0
        out[:, [0, 2]] = v
        return out * x
    x = ta.tensor(np.random.default_rng(2).standard_normal((2, 3)), requires_grad=True)
    v = ta.tensor(np.random.default_rng(3).standard_normal((2, 1)), requires_grad=True)
    assert ta.gradcheck(fn, [x, v])


def test_building_a_tensor_by_item_assignment_carries_gradients():
    w = ta.tensor([1.0, 2.0], requires_grad=True)
    out = ta.zeros(3)
    out[0] = w[0] * 3.0
    out[2] = w[1]
    assert out.requires_grad and not out.is_leaf
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 1.0])


def test_in_place_on_a_view_while_recording_is_recorded_as_torch():
    x = ta.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    h = x * 1.0
    row = h[0]
    row.mul_(3.0)                   # was refused; torch records it (tests/test_view_writes.py)
    h.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[3.0, 3.0], [1.0, 1.0]])


def test_in_place_on_views_without_recording_writes_shared_memory():
    x = ta.zeros(2, 3)
    row = x[1]
    row.fill_(2.0)
    x.reshape(-1)[0] = 5.0
    np.testing.assert_array_equal(x.numpy(), [[5.0, 0, 0], [2.0, 2.0, 2.0]])


def test_in_place_ops_keep_dtype_and_shape_rules():
    x = ta.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="cannot be stored"):
        x.add_(0.5)
    y = ta.zeros(3)
    with pytest.raises(RuntimeError, match="shape"):
        y.add_(ta.ones(2, 3))
    y.add_(ta.ones(3), alpha=2.0).sub_(1.0).mul_(3.0).div_(2.0).clamp_(max=1.0)
    assert y.tolist() == [1.0, 1.0, 1.0]
    assert y._version == 5


def test_fully_in_place_zero_of_grad_keeps_the_same_tensor():
    p = nn.Parameter(np.ones(2, dtype=np.float32))
    (p * 2).sum().backward()
    grad = p.grad
    optim.SGD([p], lr=0.1).zero_grad(set_to_none=False)
    assert p.grad is grad and grad.tolist() == [0.0, 0.0]


# ---------------------------------------------------------------- threads
def test_backward_from_several_threads_accumulates_exactly():
    w = ta.tensor([1.0], dtype="float64", requires_grad=True)

    def work():
        for _ in range(300):
            (w * 2.0).sum().backward()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert w.grad.item() == 4 * 300 * 2.0          # was 7136 of 9600 (for 8 per call)


# ---------------------------------------------------------------- custom functions
class Exp(ta.autograd.Function):
    """PyTorch's documentation example, unchanged."""

    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class MulConstant(ta.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, constant):
        ctx.constant = constant
        return tensor * constant

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.constant, None


def test_pytorch_style_custom_function():
    x = ta.tensor([0.1, 0.7], dtype="float64", requires_grad=True)
    y = Exp.apply(x)
    assert y.grad_fn is not None
    (y * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([0.1, 0.7]))
    assert ta.gradcheck(lambda t: MulConstant.apply(Exp.apply(t), 3.0), [x])


def test_pytorch_style_function_checks_its_saved_tensors_and_gradient_count():
    x = ta.tensor([0.1], requires_grad=True)
    y = Exp.apply(x)
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()

    class Wrong(ta.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output

    with pytest.raises(RuntimeError, match="returned 1 gradient"):
        Wrong.apply(ta.tensor([1.0], requires_grad=True), ta.tensor([2.0])).sum().backward()


def test_autograd_grad_returns_gradients_without_touching_dot_grad():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    h = x * x
    (gx,) = ta.autograd.grad(h.sum(), x, retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), [2.0, 4.0])
    (gh,) = ta.autograd.grad(h.sum() * 3.0, [h])
    np.testing.assert_allclose(gh.numpy(), [3.0, 3.0])
    assert x.grad is None


def test_autograd_grad_fills_retained_grads_on_its_path_only_as_pytorch_does():
    """torch.autograd.grad runs only the Functions that lead to the asked-for inputs; a
    retain_grad() tensor on that path gets its .grad (y: dz/dy = 2y + u = 7), one off it
    does not (u: w is not asked for), and an asked-for non-leaf with retain_grad gets one."""
    x = ta.tensor([1.0, 1.0], requires_grad=True)
    w = ta.tensor([1.0, 1.0], requires_grad=True)
    y, u = x * 2, w * 3
    y.retain_grad()
    u.retain_grad()
    (gx,) = ta.autograd.grad((y * y).sum() + (u * y).sum(), x)
    np.testing.assert_allclose(gx.numpy(), [14.0, 14.0])
    np.testing.assert_allclose(y.grad.numpy(), [7.0, 7.0])
    assert u.grad is None and x.grad is None and w.grad is None
    y = x * 2
    y.retain_grad()
    (gy,) = ta.autograd.grad((y * y).sum(), y)
    np.testing.assert_allclose(gy.numpy(), [4.0, 4.0])
    np.testing.assert_allclose(y.grad.numpy(), [4.0, 4.0])


def test_autograd_grad_does_not_run_a_freed_branch_that_leads_elsewhere():
    """A branch already backpropagated (its saved arrays freed) that does not lead to the
    asked-for input is not run, so it cannot raise (PyTorch: the same)."""
    x = ta.tensor([1.0, 1.0], requires_grad=True)
    w = ta.tensor([1.0, 1.0], requires_grad=True)
    s = w.exp().sum()
    s.backward()                                  # frees exp's saved output
    (gx,) = ta.autograd.grad((x * x).sum() + s, x)
    np.testing.assert_allclose(gx.numpy(), [2.0, 2.0])
    with pytest.raises(RuntimeError, match="second time"):   # control: on the path it raises
        ta.autograd.grad((x * x).sum() + s, w)


# ---------------------------------------------------------------- misc habits
def test_numpy_functions_work_on_tensors_without_grad_and_refuse_graphs():
    g = ta.tensor([1.0, -2.0])
    assert np.abs(g).max() == 2.0 and bool(np.isfinite(g).all())
    with pytest.raises(TypeError, match="requires grad"):
        np.exp(ta.tensor([1.0], requires_grad=True))


def test_iterating_a_zero_dim_tensor_raises():
    with pytest.raises(TypeError, match="0-d"):
        list(ta.tensor(1.0))
    assert [t.item() for t in ta.tensor([1.0, 2.0])] == [1.0, 2.0]


def test_no_grad_is_also_a_decorator_and_set_grad_enabled_works():
    @ta.no_grad()
    def f(x):
        return x * 2
    assert not f(ta.tensor([1.0], requires_grad=True)).requires_grad
    with ta.set_grad_enabled(False):
        assert not ta.is_grad_enabled()
    assert ta.is_grad_enabled()


def test_clip_grad_norm_returns_a_0d_tensor_and_tensors_format_like_pytorch():
    p = nn.Parameter(np.ones(2, dtype=np.float32))
    (p * 3.0).sum().backward()
    norm = optim.clip_grad_norm_([p], 1.0)
    assert isinstance(norm, ta.Tensor) and norm.shape == ()       # was a Python float
    assert f"{norm:.3f}" == f"{np.sqrt(18):.3f}" and float(norm) == norm.item()
    assert f"{ta.tensor(1.5)}" == "1.5" and str(ta.tensor(1.5)) == "tensor(1.5000)"  # torch
