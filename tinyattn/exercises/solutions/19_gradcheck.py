"""Exercise 19, checking your engine: finite differences: reference solution.

Derivation (docs/derivations.md#gradient-checking)
    Taylor: f(x + eps) - f(x - eps) = 2 eps f'(x) + eps^3 f'''(x) / 3 + ..., so the central
    difference is f'(x) + O(eps^2); the one-sided (f(x + eps) - f(x)) / eps is only
    f'(x) + O(eps). Each evaluation of f is rounded to about 1e-16 |f| in float64, and the
    division by 2 eps magnifies that to 1e-16 |f| / eps: at eps = 1e-6 about 1e-10 |f|.
    Perturbing element i gives d f / d x_i; the input must be restored after each one.
    The comparison allows atol + rtol |numeric| per element, so large gradients get room
    for their larger round-off, and every element is compared (a wrong gradient may be
    wrong in one element only).
"""
import contextlib

import numpy as np


_grad_enabled = True                    # the switch: do ops record the graph?


def is_grad_enabled():
    """True when ops record their parents (the default), False inside no_grad()."""
    return _grad_enabled


@contextlib.contextmanager
def no_grad():
    """Inside ``with no_grad():`` ops record nothing; afterwards the switch is what it was
    before (also after an exception, also when blocks are nested)."""
    global _grad_enabled
    previous = _grad_enabled
    _grad_enabled = False
    try:
        yield
    finally:                            # restore even when the block raises
        _grad_enabled = previous


class Tensor:
    """An array that remembers how it was made: the tensors it was computed from (parents)
    and the function that sends a gradient back to them (backward_fn)."""

    def __init__(self, data, parents=(), backward_fn=None, op=""):
        self.data = np.asarray(data, dtype=np.float64)
        self.grad = None                # d root / d self after backward, data's shape
        self.parents = tuple(parents)   # the tensors this one was computed from
        self.backward_fn = backward_fn  # grad (this tensor's shape) -> one grad per parent
        self.op = op                    # the op that made it: "add", "mul", ...; "" = leaf

    def __repr__(self):
        return f"Tensor(op={self.op or 'leaf'!r}, shape={self.data.shape})"

    def __add__(self, other):
        return add(self, as_tensor(other))

    def __mul__(self, other):
        return mul(self, as_tensor(other))

    def __matmul__(self, other):
        return matmul(self, as_tensor(other))

    def backward(self, grad=None):
        """d self / d (every leaf): see backward() below."""
        backward(self, grad)

    def __neg__(self):
        return mul(self, Tensor(-1.0))

    def __sub__(self, other):
        return add(self, -as_tensor(other))


def as_tensor(x):
    """x itself if it is a Tensor, else a new leaf holding x."""
    return x if isinstance(x, Tensor) else Tensor(x)


def result(data, parents, backward_fn, op):
    """The output tensor of an op: with its parents and backward_fn when grad is enabled,
    a plain leaf (nothing recorded) inside no_grad()."""
    if not is_grad_enabled():
        return Tensor(data, op=op)
    return Tensor(data, parents, backward_fn, op)


def add(a, b):
    """out = a + b."""
    def backward_fn(grad):
        return unbroadcast(grad, a.data.shape), unbroadcast(grad, b.data.shape)

    return result(a.data + b.data, (a, b), backward_fn, "add")


def mul(a, b):
    """out = a * b, elementwise."""
    def backward_fn(grad):
        return unbroadcast(grad * b.data, a.data.shape), unbroadcast(grad * a.data, b.data.shape)

    return result(a.data * b.data, (a, b), backward_fn, "mul")


def tanh(a):
    """out = tanh(a), elementwise."""
    out = np.tanh(a.data)

    def backward_fn(grad):
        return (grad * (1.0 - out * out),)   # tanh' = 1 - tanh^2: reuse the output

    return result(out, (a,), backward_fn, "tanh")


def exp(a):
    """out = exp(a), elementwise. Given: the pattern every op follows."""
    out = np.exp(a.data)

    def backward_fn(grad):              # grad = d L / d out, out's shape
        return (grad * out,)            # d out / d a = exp(a) = out; a tuple: one per parent

    return result(out, (a,), backward_fn, "exp")


def matmul(a, b):
    """out = a @ b for matrices: a (M, K) @ b (K, N) -> (M, N)."""
    def backward_fn(grad):              # grad (M, N)
        return grad @ b.data.T, a.data.T @ grad   # (M, N) @ (N, K), (K, M) @ (M, N)

    return result(a.data @ b.data, (a, b), backward_fn, "matmul")


def sum_all(a):
    """out = the sum of every element of a: a 0-d tensor."""
    def backward_fn(grad):              # grad is 0-d
        return (grad * np.ones_like(a.data),)    # every element counts once

    return result(np.asarray(a.data.sum()), (a,), backward_fn, "sum_all")


def unbroadcast(grad, shape):
    """Sum grad (the output's shape) down to ``shape``, the shape of an input that
    broadcasting copied: the backward of broadcasting."""
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))   # leading axes it lacked
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad  # its size-1 axes


def topological_order(root):
    """Every tensor root was computed from (root included), each once, every tensor after
    all of its parents: inputs first, root last."""
    order, visited = [], set()
    stack = [(root, False)]             # (node, are its parents already in order?)
    while stack:
        node, parents_done = stack.pop()
        if parents_done:
            order.append(node)
        elif id(node) not in visited:
            visited.add(id(node))
            stack.append((node, True))      # emit it after ...
            for parent in node.parents:     # ... everything it was computed from
                if id(parent) not in visited:
                    stack.append((parent, False))
    return order


def backward(root, grad=None):
    """Push grad = d L / d root (ones if None) back through the graph: every leaf reached
    ADDS its gradient to leaf.grad (so gradients accumulate across calls, as in PyTorch)."""
    grads = {id(root): np.ones_like(root.data) if grad is None else np.asarray(grad)}
    for node in reversed(topological_order(root)):  # every consumer before its inputs
        node_grad = grads.pop(id(node), None)
        if node_grad is None:
            continue
        if not node.parents:                        # a leaf: keep its gradient, adding up
            node.grad = node_grad.copy() if node.grad is None else node.grad + node_grad
            continue                                # (a copy: add passes one array twice)
        for parent, parent_grad in zip(node.parents, node.backward_fn(node_grad)):
            key = id(parent)                        # a parent used twice: add, never assign
            grads[key] = parent_grad if key not in grads else grads[key] + parent_grad


def numeric_gradient(f, x, eps=1e-6):
    """d f / d x by central differences. f maps an array of x's shape to a number; x is a
    float64 array and must be the same after the call. Returns an array of x's shape."""
    x = np.array(x, dtype=np.float64)   # a private copy: the caller's x never changes
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        saved = x[i]
        x[i] = saved + eps
        up = float(f(x))
        x[i] = saved - eps
        down = float(f(x))
        x[i] = saved                    # put it back before the next element
        grad[i] = (up - down) / (2.0 * eps)
    return grad


def gradcheck(f, x, atol=1e-5, rtol=1e-3):
    """True when the engine's gradient of f at x matches finite differences everywhere:
    |analytic - numeric| <= atol + rtol * |numeric|. f maps a Tensor to a 0-d Tensor."""
    leaf = Tensor(x)
    backward(f(leaf))
    analytic = leaf.grad if leaf.grad is not None else np.zeros_like(leaf.data)
    numeric = numeric_gradient(lambda array: f(Tensor(array)).data, x)
    return bool(np.all(np.abs(analytic - numeric) <= atol + rtol * np.abs(numeric)))
