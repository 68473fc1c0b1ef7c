"""Exercise 14, the graph: ops that record where their output came from.

Task
    Write add, mul, tanh, matmul and sum_all. Each computes its output array and returns a
    Tensor that records (1) its parents, the input tensors, and (2) backward_fn, a function
    from grad = dL/d out (out's shape) to a tuple with one gradient per parent, in the
    parents' order. exp, below, is done: copy its pattern.

The engine
    Tensor(data, parents, backward_fn, op) holds a float64 array in .data. A tensor you make
    yourself is a leaf: no parents. Exercises 15-20 build the rest of reverse-mode autograd
    on these ops: the order to visit the graph in, the backward pass, broadcasting, a no-grad
    switch, a gradient check, and training a small network.

Shapes
    Inputs of add and mul have the same shape here (exercise 17 adds broadcasting).
    matmul: a (M, K) @ b (K, N) -> (M, N). sum_all: any shape -> a 0-d array.

Hints (read docs/derivations.md#autograd)
    1. out = a * b: d out / d a = b, so da = grad * b. Which one is db?
    2. backward_fn closes over a and b (or over out): it runs later, when backward reaches
       this op, with the gradient that reached out.
    3. Return a tuple even for one parent: (da,) - note the comma.
    4. tanh' = 1 - tanh^2: reuse the output. sum_all's grad is 0-d: every element of a got
       counted once, so each gets grad.

Check
    python -m tinyattn.exercises check graph --path <your folder>
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
    # Your code here (delete the raise).
    raise NotImplementedError("add")


def mul(a, b):
    """out = a * b, elementwise."""
    # Your code here (delete the raise).
    raise NotImplementedError("mul")


def tanh(a):
    """out = tanh(a), elementwise."""
    # Your code here (delete the raise).
    raise NotImplementedError("tanh")


def exp(a):
    """out = exp(a), elementwise. Given: the pattern every op follows."""
    out = np.exp(a.data)

    def backward_fn(grad):              # grad = d L / d out, out's shape
        return (grad * out,)            # d out / d a = exp(a) = out; a tuple: one per parent

    return Tensor(out, (a,), backward_fn, "exp")


def matmul(a, b):
    """out = a @ b for matrices: a (M, K) @ b (K, N) -> (M, N)."""
    # Your code here (delete the raise).
    raise NotImplementedError("matmul")


def sum_all(a):
    """out = the sum of every element of a: a 0-d tensor."""
    # Your code here (delete the raise).
    raise NotImplementedError("sum_all")
