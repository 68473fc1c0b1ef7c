"""Exercise 17, broadcasting: summing a gradient back to an input's shape.

Task
    Write unbroadcast(grad, shape): grad has the output's shape; return it summed down to
    ``shape``, the shape of an input that broadcasting copied. add and mul (given) call it,
    so with it they work for any two shapes NumPy can broadcast.

The engine
    Given below, solved: the engine of exercises 14-16 (do them first: this
    file gives their answers away).

Shapes
    (2, 3) -> (2, 3): nothing to do;  (2, 3, 4) -> (4,): sum axes 0 and 1;
    (3, 4) -> (3, 1): sum axis 1, keeping it;  (2, 3, 4) -> (3, 1): sum axis 0, then axis 2
    with keepdims. A 0-d shape () takes the sum of everything.

Hints (read docs/derivations.md#broadcasting)
    1. Broadcasting lines shapes up from the RIGHT. The input lacks the leading
       grad.ndim - len(shape) axes: sum them away.
    2. Then, where the input has size 1 and grad does not, sum with keepdims=True.
    3. Every copy broadcasting made sends a gradient back; copies of one number add up.

Check
    python -m tinyattn.exercises check unbroadcast --path <your folder>
"""
import numpy as np


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


def add(a, b):
    """out = a + b."""
    def backward_fn(grad):
        return unbroadcast(grad, a.data.shape), unbroadcast(grad, b.data.shape)

    return Tensor(a.data + b.data, (a, b), backward_fn, "add")


def mul(a, b):
    """out = a * b, elementwise."""
    def backward_fn(grad):
        return unbroadcast(grad * b.data, a.data.shape), unbroadcast(grad * a.data, b.data.shape)

    return Tensor(a.data * b.data, (a, b), backward_fn, "mul")


def tanh(a):
    """out = tanh(a), elementwise."""
    out = np.tanh(a.data)

    def backward_fn(grad):
        return (grad * (1.0 - out * out),)   # tanh' = 1 - tanh^2: reuse the output

    return Tensor(out, (a,), backward_fn, "tanh")


def exp(a):
    """out = exp(a), elementwise. Given: the pattern every op follows."""
    out = np.exp(a.data)

    def backward_fn(grad):              # grad = d L / d out, out's shape
        return (grad * out,)            # d out / d a = exp(a) = out; a tuple: one per parent

    return Tensor(out, (a,), backward_fn, "exp")


def matmul(a, b):
    """out = a @ b for matrices: a (M, K) @ b (K, N) -> (M, N)."""
    def backward_fn(grad):              # grad (M, N)
        return grad @ b.data.T, a.data.T @ grad   # (M, N) @ (N, K), (K, M) @ (M, N)

    return Tensor(a.data @ b.data, (a, b), backward_fn, "matmul")


def sum_all(a):
    """out = the sum of every element of a: a 0-d tensor."""
    def backward_fn(grad):              # grad is 0-d
        return (grad * np.ones_like(a.data),)    # every element counts once

    return Tensor(np.asarray(a.data.sum()), (a,), backward_fn, "sum_all")


def unbroadcast(grad, shape):
    """Sum grad (the output's shape) down to ``shape``, the shape of an input that
    broadcasting copied: the backward of broadcasting."""
    # Your code here (delete the raise).
    raise NotImplementedError("unbroadcast")


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
