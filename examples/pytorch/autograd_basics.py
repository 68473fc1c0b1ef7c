"""Automatic differentiation with torch.autograd: a one-layer network, its gradients,
turning tracking off, and vector-Jacobian products that accumulate.

Adapted from PyTorch's "Learn the Basics" autograd tutorial (autogradqs_tutorial.py).
"""
import torch

x = torch.ones(5)                           # input tensor
y = torch.zeros(3)                          # expected output
w = torch.randn(5, 3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
z = torch.matmul(x, w) + b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
print("loss", loss.item())
print("z has a grad_fn:", z.grad_fn is not None, "loss has a grad_fn:", loss.grad_fn is not None)

loss.backward()
print("w.grad", w.grad.tolist())
print("b.grad", b.grad.tolist())

z = torch.matmul(x, w) + b
print("requires_grad:", z.requires_grad)
with torch.no_grad():
    z = torch.matmul(x, w) + b
print("requires_grad under no_grad:", z.requires_grad)
z_det = (torch.matmul(x, w) + b).detach()
print("requires_grad after detach:", z_det.requires_grad)

# Vector-Jacobian products: backward(v) with v = ones, twice, then after zeroing.
inp = torch.eye(4, 5, requires_grad=True)
out = (inp + 1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print("first call", inp.grad.tolist())
out.backward(torch.ones_like(out), retain_graph=True)
print("second call", inp.grad.tolist())
inp.grad.zero_()
out.backward(torch.ones_like(out), retain_graph=True)
print("after zeroing", inp.grad.tolist())

# torch.autograd.grad returns the gradient instead of adding it to .grad.
s = torch.linspace(0.0, 1.0, 4, requires_grad=True)
(g,) = torch.autograd.grad((s ** 3).sum(), s)
print("d/ds sum(s^3)", g.tolist())
