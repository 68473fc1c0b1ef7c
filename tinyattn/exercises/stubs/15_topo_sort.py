"""Exercise 15, the order: a topological sort of the graph.

Task
    Write topological_order(root): every tensor that root was computed from (root
    included), each exactly once, and every tensor AFTER all of its parents. Backward walks
    this list from the end, so each tensor is visited only after every tensor that used it.

The engine
    Given below, solved: the engine of exercise 14 (do it first: this
    file gives its answers away).
    A tensor's inputs are tensor.parents; a leaf has none.

Hints (read docs/derivations.md#autograd)
    1. Depth-first post-order: put a node in the list after all of its parents are in it.
    2. A tensor can be reached along several paths (a diamond: y = tanh(x) * exp(x) reaches x
       twice). Keep a set of the nodes you have seen (by id(node)) and add each once.
    3. A recursive function needs one Python frame per node along the longest path, and
       Python stops at 1,000 frames: the checker uses a chain of 3,000 ops. Use a list as a
       stack: push (node, False) to expand it, (node, True) to emit it once its parents
       are done.

Check
    python -m tinyattn.exercises check topo_sort --path <your folder>
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


def as_tensor(x):
    """x itself if it is a Tensor, else a new leaf holding x."""
    return x if isinstance(x, Tensor) else Tensor(x)


def add(a, b):
    """out = a + b."""
    def backward_fn(grad):
        return grad, grad

    return Tensor(a.data + b.data, (a, b), backward_fn, "add")


def mul(a, b):
    """out = a * b, elementwise."""
    def backward_fn(grad):
        return grad * b.data, grad * a.data

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


def topological_order(root):
    """Every tensor root was computed from (root included), each once, every tensor after
    all of its parents: inputs first, root last."""
    # Your code here (delete the raise).
    raise NotImplementedError("topological_order")
