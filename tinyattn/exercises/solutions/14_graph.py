"""Exercise 14, the graph: ops that record where their output came from: reference solution.

Derivation (docs/derivations.md#autograd)
    Reverse mode needs two things from every op: the tensors it was made from (its parents)
    and how a gradient of its output becomes gradients of those parents (backward_fn, the
    chain rule for one op). With grad = dL/d out:
        add:      out = a + b        da = grad,                 db = grad
        mul:      out = a * b        da = grad * b,             db = grad * a
        tanh:     out = tanh(a)      da = grad * (1 - out^2)    (tanh' = 1 - tanh^2)
        matmul:   out = a @ b        da = grad @ b^T,           db = a^T @ grad
        sum_all:  out = sum_i a_i    da = grad * ones           (d out / d a_i = 1)
    backward_fn returns one gradient per parent, as a tuple, in the parents' order: the
    engine (exercise 16) pairs them up with zip(node.parents, ...). It multiplies by grad
    every time: an op sits in the middle of a graph, and grad is whatever flows in.
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
