"""Exercise 16, the backward pass: the chain rule over a whole graph.

Task
    Write backward(root, grad=None): push grad = dL/d root (np.ones_like(root.data) when
    None) back through the graph. Every leaf (a tensor with no parents) that the gradient
    reaches ADDS it to leaf.grad (None counts as nothing yet), so calling backward twice
    adds up, as in PyTorch.

The engine
    Given below, solved: the engine of exercises 14-15 (do them first: this
    file gives their answers away).
    node.backward_fn(g) returns one gradient per parent, in node.parents' order.

Hints (read docs/derivations.md#autograd)
    1. Keep the gradients still on their way in a dict, keyed by id(node), starting with
       {id(root): grad}. Walk reversed(topological_order(root)): each node, when its turn
       comes, has received everything it will get.
    2. A tensor used twice (y = x * x, or a diamond) gets a gradient from each use: ADD
       them. Assigning keeps only the last path's share.
    3. Store a leaf's first gradient as a copy: add's backward_fn returns the same array
       for both parents, and two leaves must not share one.

Check
    python -m tinyattn.exercises check backward --path <your folder>
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


def backward(root, grad=None):
    """Push grad = d L / d root (ones if None) back through the graph: every leaf reached
    ADDS its gradient to leaf.grad (so gradients accumulate across calls, as in PyTorch)."""
    # Your code here (delete the raise).
    raise NotImplementedError("backward")
