"""Exercise 20, training with your engine: reference solution.

Derivation (docs/optim.md#sgd)
    Gradient descent moves every parameter against its gradient: p <- p - lr * dL/dp. One
    step: compute the loss (the forward records the graph), clear the gradients (backward
    adds to .grad, so last step's gradient would still be there), backward, update. The
    update changes p.data of the very Tensor objects the model holds; a new Tensor would
    not be seen by the model. With the engine of exercises 14-19 this trains a two-layer
    network: the checker runs 100 steps and compares every loss with the reference's.
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


class MLP:
    """x (N, 2) -> tanh(x @ w1 + b1) (N, H) -> @ w2 + b2 (N, 1): a two-layer network."""

    def __init__(self, hidden=8, seed=0):
        rng = np.random.default_rng(seed)
        self.w1 = Tensor(rng.standard_normal((2, hidden)) / np.sqrt(2.0))
        self.b1 = Tensor(np.zeros(hidden))
        self.w2 = Tensor(rng.standard_normal((hidden, 1)) / np.sqrt(hidden))
        self.b2 = Tensor(np.zeros(1))

    def parameters(self):
        return [self.w1, self.b1, self.w2, self.b2]

    def __call__(self, x):
        h = tanh(x @ self.w1 + self.b1)         # (N, 2) @ (2, H) + (H,) -> (N, H)
        return h @ self.w2 + self.b2            # (N, H) @ (H, 1) + (1,) -> (N, 1)


def mse_loss(pred, target):
    """The mean of (pred - target)^2 over every element: a 0-d tensor."""
    diff = pred - target
    return sum_all(diff * diff) * (1.0 / diff.data.size)


def zero_grad(params):
    """Forget the gradients of ``params`` (a list of leaf Tensors) before the next backward."""
    for p in params:
        p.grad = None


def sgd_step(params, lr):
    """One step of gradient descent: each parameter moves by -lr times its gradient. The
    model holds these very Tensor objects: change their data, do not replace them."""
    for p in params:
        if p.grad is not None:
            p.data = p.data - lr * p.grad


def train_step(model, x, y, lr):
    """One training step on arrays x (N, 2) and y (N, 1): the loss, fresh gradients, a
    step. Returns the loss as a float."""
    loss = mse_loss(model(Tensor(x)), Tensor(y))
    zero_grad(model.parameters())           # .grad accumulates: start from nothing
    backward(loss)
    sgd_step(model.parameters(), lr)
    return float(loss.data)
