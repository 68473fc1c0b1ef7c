"""A catalogue of realistic mistakes, planted into the reference solutions as a learner would
make them (by editing the file): not one may pass, and most must be diagnosed by name.

Each entry edits one solution file (old text -> new text; the old text must be there, so the
catalogue cannot go stale silently) and says which part must fail and, where the checker is
expected to recognise it, the diagnosis kind. Most are judged with ``check_module`` (the same
verdict code, in this process: fast); every fifth runs through the isolated ``check``.
"""
from __future__ import annotations

from collections import Counter

import pytest

from tinyattn.exercises import check, check_module, find_exercise, load_file
from tinyattn.exercises.checker import SOLUTIONS_DIR

SOFTMAX = "return y * (grad - (grad * y).sum(axis=-1, keepdims=True))"
LN_DX = ("    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True)\n"
         "                 - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))")
ATT_DS = "    dscores = p * (dp - (dp * p).sum(axis=-1, keepdims=True))"
ATT_DK = "    dk = np.swapaxes(dscores, -1, -2) @ q * scale"
ATT_DV = "    dv = np.swapaxes(p, -1, -2) @ grad"
UNMASKED_P = ("    s = q @ np.swapaxes(k, -1, -2) * scale\n"
              "    e = np.exp(s - s.max(axis=-1, keepdims=True))\n"
              "    p = e / e.sum(axis=-1, keepdims=True)\n")
TOPO_LOOP = TOPO_END = None                     # set below, from the solution's text
BACKWARD_ACC = "grads[key] = parent_grad if key not in grads else grads[key] + parent_grad"
LEAF_ACC = "node.grad = node_grad.copy() if node.grad is None else node.grad + node_grad"
CONV_DX = 'dxpad[:, :, rows, cols] += np.einsum("nohw,oc->nchw", grad, weight[:, :, kh, kw])'
CONV_CROP = "dx = dxpad[:, :, ph:ph + x.shape[2], pw:pw + x.shape[3]]"
BACK_TAPS = "rows, cols = taps(kh, kw, out_hw, stride, dilation)"
POOL_FIRST = "first = (xpad[:, :, rows, cols] == out) & ~taken"
POOL_TAPS = "for kh, kw in itertools.product(range(kernel[0]), range(kernel[1])):"
POOL_ADD = "dxpad[:, :, rows, cols] += np.where(first, grad, 0.0)"

# (exercise, failing part, diagnosis kind or None, old text, new text)
MISTAKES = [
    # 01 broadcasting
    ("broadcast", "add", "shape_broadcast",
     "return unbroadcast(grad, a_shape), unbroadcast(grad, b_shape)", "return grad, grad"),
    ("broadcast", "mul", "swapped", "return unbroadcast(grad * b, a.shape), unbroadcast("
     "grad * a, b.shape)", "return unbroadcast(grad * a, a.shape), unbroadcast(grad * b, "
     "b.shape)"),
    ("broadcast", "mul", "shape_broadcast", "return unbroadcast(grad * b, a.shape), "
     "unbroadcast(grad * a, b.shape)", "return grad * b, grad * a"),
    ("broadcast", "add", "shape_keepdims",
     "return grad.sum(axis=axes, keepdims=True) if axes else grad",
     "return grad.sum(axis=axes) if axes else grad"),
    # 02 reductions
    ("reductions", "sum", "ignores_grad", "    return expand_back(grad, shape, axis, keepdims)\n"
     "\n\ndef mean_forward", "    return np.ones(shape)\n\n\ndef mean_forward"),
    ("reductions", "sum", "shape_error", "    return expand_back(grad, shape, axis, keepdims)\n"
     "\n\ndef mean_forward", "    return np.broadcast_to(grad, shape)\n\n\ndef mean_forward"),
    ("reductions", "mean", "factor", "return expand_back(grad, shape, axis, keepdims) / count",
     "return expand_back(grad, shape, axis, keepdims)"),
    ("reductions", "mean", "factor", "return expand_back(grad, shape, axis, keepdims) / count",
     "return expand_back(grad, shape, axis, keepdims) * count"),
    # 03 matmul
    ("matmul", "matmul", "shape_transpose", "db = np.swapaxes(a, -1, -2) @ grad",
     "db = np.swapaxes(grad, -1, -2) @ a"),
    ("matmul", "matmul", "shape_broadcast",
     "return unbroadcast(da, a.shape), unbroadcast(db, b.shape)", "return da, db"),
    ("matmul", "matmul", "shape_error", "da = grad @ np.swapaxes(b, -1, -2)", "da = grad @ b"),
    # 04 linear
    ("linear", "linear", "shape_transpose", "dweight = g2.T @ x2", "dweight = x2.T @ g2"),
    ("linear", "linear", "shape_broadcast", "dbias = g2.sum(axis=0)", "dbias = grad"),
    ("linear", "linear", "factor", "dbias = g2.sum(axis=0)", "dbias = g2.mean(axis=0)"),
    ("linear", "linear", "shape_error", "dx = grad @ weight ", "dx = grad @ weight.T "),
    # 05 gelu
    ("gelu", "gelu", "product_rule", "return grad * (cdf + x * pdf)", "return grad * cdf"),
    ("gelu", "gelu", "density", "pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)",
     "pdf = np.exp(-0.5 * x * x)"),
    ("gelu", "gelu", "ignores_grad", "return grad * (cdf + x * pdf)", "return cdf + x * pdf"),
    ("gelu", "gelu", "sign", "return grad * (cdf + x * pdf)", "return -grad * (cdf + x * pdf)"),
    ("gelu", "gelu", "float32", "return grad * (cdf + x * pdf)",
     "return (grad * (cdf + x * pdf)).astype(np.float32)"),
    # 06 softmax
    ("softmax", "softmax", "diagonal", SOFTMAX, "return grad * y * (1 - y)"),
    ("softmax", "softmax", "softmax_axis", SOFTMAX,
     "return y * (grad - (grad * y).sum(axis=0, keepdims=True))"),
    ("softmax", "softmax", "shape_error", SOFTMAX, "return y * (grad - (grad * y).sum(axis=-1))"),
    ("softmax", "softmax", "missing_y", SOFTMAX,
     "return grad - (grad * y).sum(axis=-1, keepdims=True)"),
    ("softmax", "softmax", "factor", SOFTMAX, "return 2 * " + SOFTMAX[7:]),
    # 07 log_softmax, nll, cross-entropy
    ("log_softmax_nll", "log_softmax", "diagonal",
     "return grad - np.exp(out) * grad.sum(axis=-1, keepdims=True)",
     "return grad * (1 - np.exp(out))"),
    ("log_softmax_nll", "log_softmax", "softmax_axis",
     "return grad - np.exp(out) * grad.sum(axis=-1, keepdims=True)",
     "return grad - np.exp(out) * grad.sum(axis=0, keepdims=True)"),
    ("log_softmax_nll", "nll", "factor", "dlogp[np.arange(n), target] = -grad / n",
     "dlogp[np.arange(n), target] = -grad"),
    ("log_softmax_nll", "nll", "sign", "dlogp[np.arange(n), target] = -grad / n",
     "dlogp[np.arange(n), target] = grad / n"),
    ("log_softmax_nll", "nll", "ignores_grad", "dlogp[np.arange(n), target] = -grad / n",
     "dlogp[np.arange(n), target] = -1.0 / n"),
    ("log_softmax_nll", "cross_entropy", "sign", "return dlogits * (grad / n)",
     "return -dlogits * (grad / n)"),
    ("log_softmax_nll", "cross_entropy", "ignores_grad", "return dlogits * (grad / n)",
     "return dlogits / n"),
    ("log_softmax_nll", "cross_entropy", "factor", "return dlogits * (grad / n)",
     "return dlogits * grad"),
    # 08 masking
    ("masked_softmax", "keep_or_fill", "masked", "return np.where(keep, grad, 0.0)",
     "return grad.copy()"),
    ("masked_softmax", "keep_or_fill", "inverted_mask", "return np.where(keep, grad, 0.0)",
     "return np.where(keep, 0.0, grad)"),
    ("masked_softmax", "masked_softmax", "fully_masked_row", "    y, keep = cache\n    " +
     SOFTMAX, "    y, keep = cache\n    " + SOFTMAX + " / y.sum(axis=-1, keepdims=True)"),
    ("masked_softmax", "masked_softmax", "softmax_axis", "    y, keep = cache\n    " + SOFTMAX,
     "    y, keep = cache\n    return y * (grad - (grad * y).sum(axis=0, keepdims=True))"),
    # 09 layer norm
    ("layer_norm", "layer_norm", "constant_stats", LN_DX, "    dx = rstd * dxhat"),
    ("layer_norm", "layer_norm", "layer_norm_sum", LN_DX, LN_DX.replace(".mean(", ".sum(")),
    ("layer_norm", "layer_norm", "layer_norm_sum", LN_DX,
     LN_DX.replace("dxhat.mean(axis", "dxhat.sum(axis", 1)),
    ("layer_norm", "layer_norm", "layer_norm_sum", LN_DX,
     LN_DX.replace("(dxhat * xhat).mean(", "(dxhat * xhat).sum(")),
    ("layer_norm", "layer_norm", "layer_norm_path", LN_DX,
     "    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True))"),
    ("layer_norm", "layer_norm", "layer_norm_path", LN_DX,
     "    dx = rstd * (dxhat - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))"),
    ("layer_norm", "layer_norm", "shape_broadcast", "return dx, (grad * xhat).sum(axis=rows), ",
     "return dx, grad * xhat, "),
    ("layer_norm", "layer_norm", "layer_norm_weight", "dxhat = grad * weight", "dxhat = grad"),
    # 10 embedding
    ("embedding", "embedding", "repeated_ids",
     "np.add.at(dweight, ids.reshape(-1), grad.reshape(-1, dim))",
     "dweight[ids.reshape(-1)] += grad.reshape(-1, dim)"),
    ("embedding", "embedding", "float32", "dweight = np.zeros((vocab, dim))",
     "dweight = np.zeros((vocab, dim), dtype=np.float32)"),
    # 11 heads
    ("heads", "split_heads", "transpose", "    g = grad.transpose(0, 2, 1, 3)",
     "    g = grad"),
    ("heads", "merge_heads", "transpose", "return g.transpose(0, 2, 1, 3)",
     "return g.reshape(b, h, s, d_k)"),
    # 12 attention
    ("attention", "attention", "diagonal", ATT_DS, "    dscores = p * (1 - p) * dp"),
    ("attention", "attention", "attention_no_p", ATT_DS,
     "    dscores = dp - (dp * p).sum(axis=-1, keepdims=True)"),
    ("attention", "attention", "transpose", ATT_DK, "    dk = dscores @ q * scale"),
    ("attention", "attention", "factor", "    dq = dscores @ k * scale", "    dq = dscores @ k"),
    ("attention", "attention", "attention_masked", ATT_DV,
     UNMASKED_P + "    dv = np.swapaxes(p, -1, -2) @ grad"),
    ("attention", "attention", "attention_masked", "    dv = np.swapaxes(p, -1, -2) @ grad  "
     "        # (..., S_k, S_q) @ (..., S_q, d_v)\n",
     "    dv = np.swapaxes(p, -1, -2) @ grad\n" + UNMASKED_P),
    ("attention", "attention", "transpose", ATT_DV, "    dv = p @ grad"),
    # 13 rope
    ("rope", "rope", "transpose", "dx[..., 0::2] = g_even * cos + g_odd * sin\n"
     "    dx[..., 1::2] = -g_even * sin + g_odd * cos",
     "dx[..., 0::2] = g_even * cos - g_odd * sin\n    dx[..., 1::2] = g_even * sin + "
     "g_odd * cos"),
    ("rope", "rope", None, "dx[..., 1::2] = -g_even * sin + g_odd * cos",
     "dx[..., 1::2] = g_even * sin + g_odd * cos"),
    # 14 graph
    ("graph", "mul", "swapped", "return grad * b.data, grad * a.data",
     "return grad * a.data, grad * b.data"),
    ("graph", "add", "backward_tuple", "        return grad, grad\n", "        return grad\n"),
    ("graph", "mul", "parents_missing", 'return Tensor(a.data * b.data, (a, b), backward_fn',
     'return Tensor(a.data * b.data, (), backward_fn'),
    ("graph", "mul", "parents_order", 'return Tensor(a.data * b.data, (a, b), backward_fn',
     'return Tensor(a.data * b.data, (b, a), backward_fn'),
    ("graph", "add", "parents", 'return Tensor(a.data + b.data, (a, b), backward_fn',
     'return Tensor(a.data + b.data, (a.data, b.data), backward_fn'),
    ("graph", "tanh", "tanh_input", "return (grad * (1.0 - out * out),)",
     "return (grad * (1.0 - a.data * a.data),)"),
    ("graph", "tanh", "backward_tuple", "return (grad * (1.0 - out * out),)",
     "return grad * (1.0 - out * out)"),
    ("graph", "sum_all", "ignores_grad", "return (grad * np.ones_like(a.data),)",
     "return (np.ones_like(a.data),)"),
    ("graph", "matmul", "shape", "return grad @ b.data.T, a.data.T @ grad",
     "return grad @ b.data.T, grad.T @ a.data"),
    ("graph", "matmul", "no_backward_fn", 'return Tensor(a.data @ b.data, (a, b), backward_fn',
     'return Tensor(a.data @ b.data, (a, b), None'),
    # 15 topological sort
    ("topo_sort", "topological_order", "recursion", "TOPO", """    order, visited = [], set()

    def visit(node):
        if id(node) not in visited:
            visited.add(id(node))
            for parent in node.parents:
                visit(parent)
            order.append(node)
    visit(root)
    return order
"""),
    ("topo_sort", "topological_order", "topo_bfs", "TOPO",
     """    order, visited, queue = [], set(), [root]
    while queue:
        node = queue.pop(0)
        if id(node) not in visited:
            visited.add(id(node))
            order.append(node)
            queue.extend(node.parents)
    return order[::-1]
"""),
    ("topo_sort", "topological_order", "topo_duplicate", "TOPO",
     """    order, stack = [], [(root, False)]
    while stack:
        node, parents_done = stack.pop()
        if parents_done:
            order.append(node)
        else:
            stack.append((node, True))
            stack.extend((parent, False) for parent in node.parents)
    return order
"""),
    ("topo_sort", "topological_order", "topo_order", "TOPO",
     """    order, visited, stack = [], set(), [root]
    while stack:
        node = stack.pop()
        if id(node) not in visited:
            visited.add(id(node))
            order.append(node)
            stack.extend(node.parents)
    return order[::-1]
"""),
    # 16 backward
    ("backward", "backward", "assign", BACKWARD_ACC, "grads[key] = parent_grad"),
    ("backward", "backward", "leaf_assign", LEAF_ACC, "node.grad = node_grad.copy()"),
    ("backward", "backward", "no_grad_stored", "for node in reversed(topological_order(root)):",
     "for node in topological_order(root):"),
    ("backward", "backward", "ignores_seed",
     "grads = {id(root): np.ones_like(root.data) if grad is None else np.asarray(grad)}",
     "grads = {id(root): np.ones_like(root.data)}"),
    ("backward", "backward", "no_grad_stored", LEAF_ACC, "pass"),
    # 17 unbroadcast
    ("unbroadcast", "unbroadcast", "unbroadcast_keepdims",
     "return grad.sum(axis=axes, keepdims=True) if axes else grad",
     "return grad.sum(axis=axes) if axes else grad"),
    ("unbroadcast", "unbroadcast", "unbroadcast_size1",
     "return grad.sum(axis=axes, keepdims=True) if axes else grad", "return grad"),
    ("unbroadcast", "unbroadcast", "unbroadcast_left",
     "grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))",
     "return grad.sum(axis=tuple(range(len(shape), grad.ndim)))"),
    # 18 no_grad
    ("no_grad", "no_grad", "no_grad", "    try:\n        yield\n    finally:  "
     "                          # restore even when the block raises\n        _grad_enabled "
     "= previous", "    yield\n    _grad_enabled = previous"),
    ("no_grad", "no_grad", "no_grad", "    finally:                            # restore even "
     "when the block raises\n        _grad_enabled = previous",
     "    finally:\n        _grad_enabled = True"),
    ("no_grad", "no_grad", "no_grad", "    if not is_grad_enabled():\n        return "
     "Tensor(data, op=op)\n", ""),
    ("no_grad", "no_grad", "no_grad", "    try:\n        yield\n    finally:  "
     "                          # restore even when the block raises\n        _grad_enabled "
     "= previous", "    try:\n        yield\n    except Exception:\n        pass\n    "
     "_grad_enabled = previous"),
    # 19 gradcheck
    ("gradcheck", "numeric_gradient", "numeric_forward", "        x[i] = saved - eps\n"
     "        down = float(f(x))\n        x[i] = saved                    # put it back "
     "before the next element\n        grad[i] = (up - down) / (2.0 * eps)",
     "        x[i] = saved\n        down = float(f(x))\n        grad[i] = (up - down) / eps"),
    ("gradcheck", "numeric_gradient", "numeric_factor", "grad[i] = (up - down) / (2.0 * eps)",
     "grad[i] = (up - down) / eps"),
    ("gradcheck", "numeric_gradient", "numeric_changes_x",
     "    x = np.array(x, dtype=np.float64)   # a private copy: the caller's x never changes\n"
     "    grad = np.zeros_like(x)\n    for i in np.ndindex(x.shape):\n        saved = x[i]\n"
     "        x[i] = saved + eps\n        up = float(f(x))\n        x[i] = saved - eps\n"
     "        down = float(f(x))\n        x[i] = saved ",
     "    grad = np.zeros_like(x)\n    for i in np.ndindex(x.shape):\n        saved = x[i]\n"
     "        x[i] = saved + eps\n        up = float(f(x))\n        x[i] = saved - eps\n"
     "        down = float(f(x))\n        # x[i] = saved"),
    ("gradcheck", "gradcheck", "gradcheck_passes",
     "return bool(np.all(np.abs(analytic - numeric) <= atol + rtol * np.abs(numeric)))",
     "return bool(abs(analytic.flat[0] - numeric.flat[0]) <= atol + rtol * "
     "abs(numeric.flat[0]))"),
    ("gradcheck", "gradcheck", "gradcheck_rejects",
     "return bool(np.all(np.abs(analytic - numeric) <= atol + rtol * np.abs(numeric)))",
     "return bool(np.all(np.abs(analytic - numeric) <= 1e-9))"),
    ("gradcheck", "gradcheck", "gradcheck_loose",
     "return bool(np.all(np.abs(analytic - numeric) <= atol + rtol * np.abs(numeric)))",
     "return bool(np.all(np.abs(analytic - numeric) <= atol + 0.05 * np.abs(numeric)))"),
    # 20 train
    ("train", "train_step", "no_zero_grad", "    zero_grad(model.parameters())           "
     "# .grad accumulates: start from nothing\n", ""),
    ("train", "sgd_step", "ascent", "p.data = p.data - lr * p.grad",
     "p.data = p.data + lr * p.grad"),
    ("train", "sgd_step", "sgd_no_change", "            p.data = p.data - lr * p.grad",
     "            p = Tensor(p.data - lr * p.grad)"),
    ("train", "zero_grad", "zero_grad", "    for p in params:\n        p.grad = None",
     "    pass"),
    ("train", "train_step", "zero_after_backward",
     "    zero_grad(model.parameters())           # .grad accumulates: start from nothing\n"
     "    backward(loss)\n", "    backward(loss)\n    zero_grad(model.parameters())\n"),
    # 27 LSTM step
    ("lstm_cell", "lstm_cell", "gate_derivative", "dc * i * (1 - g * g)", "dc * i * g * (1 - g)"),
    ("lstm_cell", "lstm_cell", "cell_path", "dc = dc_out + dh * o * (1 - tanh_c ** 2)",
     "dc = dh * o * (1 - tanh_c ** 2)"),
    ("lstm_cell", "lstm_cell", "cell_tanh", "dc = dc_out + dh * o * (1 - tanh_c ** 2)",
     "dc = dc_out + dh * o"),
    ("lstm_cell", "lstm_cell", "no_carry", "dh_prev = da @ w_hh ",
     "dh_prev = np.zeros_like(h_prev) "),
    # 28 GRU step
    ("gru_cell", "gru_cell", "no_direct", "dh_prev = grad * z + dgates_h @ w_hh",
     "dh_prev = dgates_h @ w_hh"),
    ("gru_cell", "gru_cell", "no_carry", "dh_prev = grad * z + dgates_h @ w_hh",
     "dh_prev = grad * z"),
    ("gru_cell", "gru_cell", "reset_outside_bias", "            dgates_h.sum(axis=0))",
     "            np.concatenate([dgates_h.sum(axis=0)[:-r.shape[1]], da_n.sum(axis=0)]))"),
    ("gru_cell", "gru_cell", "gate_derivative", "da_z = grad * (h_prev - n) * z * (1 - z)",
     "da_z = grad * (n - h_prev) * z * (1 - z)"),
    # 29 conv2d (issue 36)
    ("conv2d", "conv2d", "flipped_kernel", CONV_DX,
     CONV_DX.replace("kh, kw])", "-1 - kh, -1 - kw])")),
    ("conv2d", "conv2d", "flipped_kernel", "dweight[:, :, kh, kw] = ",
     "dweight[:, :, -1 - kh, -1 - kw] = "),
    ("conv2d", "conv2d", "conv_stride", BACK_TAPS, BACK_TAPS.replace("stride", "(1, 1)")),
    ("conv2d", "conv2d", "conv_dilation", BACK_TAPS, BACK_TAPS.replace("dilation", "(1, 1)")),
    ("conv2d", "conv2d", "padding", CONV_CROP, "dx = dxpad"),
    ("conv2d", "conv2d", "padding", CONV_CROP, "dx = dxpad[:, :, ph:, pw:]"),
    ("conv2d", "conv2d", "padding_crop", CONV_CROP, "dx = dxpad[:, :, :x.shape[2], :x.shape[3]]"),
    ("conv2d", "conv2d", "shape_broadcast", "grad.sum(axis=(0, 2, 3))", "grad.sum(axis=(2, 3))"),
    ("conv2d", "conv2d", "overlap_overwrite", CONV_DX, CONV_DX.replace("+=", "=")),
    # 30 max pooling (issue 36)
    ("max_pool", "max_pool2d", "ties_every", POOL_FIRST, "first = xpad[:, :, rows, cols] == out"),
    ("max_pool", "max_pool2d", "ties_last", POOL_TAPS,
     "for kh, kw in list(itertools.product(range(kernel[0]), range(kernel[1])))[::-1]:"),
    ("max_pool", "max_pool2d", "pool_stride", BACK_TAPS, BACK_TAPS.replace("stride", "(1, 1)")),
    ("max_pool", "max_pool2d", "pool_dilation", BACK_TAPS,
     BACK_TAPS.replace("dilation", "(1, 1)")),
    ("max_pool", "max_pool2d", "overlap_overwrite", POOL_ADD,
     "dxpad[:, :, rows, cols] = np.where(first, grad, dxpad[:, :, rows, cols])"),
    ("max_pool", "max_pool2d", "padding", "return dxpad[:, :, ph:ph + x.shape[2], "
     "pw:pw + x.shape[3]]", "return dxpad"),
]


def _topo_body(source: str) -> str:
    start = source.index("    order, visited = [], set()\n    stack = [(root, False)]")
    end = source.index("    return order\n", start) + len("    return order\n")
    return source[start:end]


def _planted(exercise, old: str, new: str) -> str:
    source = (SOLUTIONS_DIR / exercise.filename).read_text()
    if old == "TOPO":
        old = _topo_body(source)
    assert source.count(old) >= 1, f"{exercise.filename}: {old!r} is not in the solution"
    return source.replace(old, new, 1)


def _judge(index, tmp_path):
    name, part, kind, old, new = MISTAKES[index]
    exercise = find_exercise(name)
    (tmp_path / exercise.filename).write_text(_planted(exercise, old, new))
    if index % 5 == 0:                          # the full path: a separate process
        return check(exercise, tmp_path, timeout=60)
    return check_module(exercise, load_file(tmp_path / exercise.filename))


def test_the_catalogue_is_large_and_covers_every_exercise():
    assert len(MISTAKES) >= 40
    assert {m[0] for m in MISTAKES} == {ex.name for ex in __import__(
        "tinyattn.exercises", fromlist=["EXERCISES"]).EXERCISES if ex.track != "systems"}
    # the systems track's catalogue: test_exercise_systems.py


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("index", range(len(MISTAKES)),
                         ids=[f"{m[1]}-{m[2] or 'caught'}-{i}" for i, m in enumerate(MISTAKES)])
def test_a_planted_mistake_never_passes_and_is_named(index, tmp_path):
    name, part, kind, old, new = MISTAKES[index]
    result = _judge(index, tmp_path)
    assert not result.passed, f"a wrong answer PASSED:\n{result.text}"
    failed = {p.part: p for p in result.parts if not p.passed}
    assert part in failed, result.text
    if kind is not None:
        assert failed[part].diagnosis.kind == kind, failed[part].text
    assert "diagnosis" in failed[part].text or failed[part].status == "error", \
        failed[part].text


def test_the_wrong_sign_hint_stays_on_topic(tmp_path):
    """Only the losses (exercise 07) talk about -log p; GELU's hint does not."""
    texts = {}
    for name, part, kind, old, new in MISTAKES:
        if kind == "sign" and name in ("gelu", "log_softmax_nll"):
            exercise = find_exercise(name)
            module_path = tmp_path / f"{part}_{exercise.filename}"
            module_path.write_text(_planted(exercise, old, new))
            result = check_module(exercise, load_file(module_path))
            texts[part] = next(p for p in result.parts if p.part == part).diagnosis.message
    assert "log p" not in texts["gelu"] and "Wrong sign" in texts["gelu"]
    assert "-log p" in texts["nll"] and "-log p" in texts["cross_entropy"]


def test_most_planted_mistakes_are_diagnosed_by_name():
    kinds = Counter(m[2] for m in MISTAKES)
    named = sum(n for kind, n in kinds.items() if kind not in (None, "unknown", "wrong"))
    assert named >= 0.9 * len(MISTAKES)
