"""Exercise 15, the order: a topological sort of the graph: reference solution.

Derivation (docs/derivations.md#autograd)
    A node's gradient is complete only when every op that used it has sent its share back.
    So backward visits the graph in reverse topological order: consumers before the tensors
    they consumed. A topological order (inputs before outputs) is a depth-first post-order:
    a node is appended after all of its parents. Two rules make it right:
        each node once: a set of visited nodes, or a diamond's shared node appears twice;
        no recursion: an explicit stack, or a chain deeper than Python's recursion limit
        (1,000 frames) raises RecursionError.
    Each node is pushed as "expand me" (its parents are pushed above it, so they finish
    first) and pushed back as "emit me" before its parents: when that entry comes off the
    stack, all of its parents are already in the list. Breadth-first from the root is NOT a
    topological order: with x -> a -> b and c = b * x, it lists x before a.
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
