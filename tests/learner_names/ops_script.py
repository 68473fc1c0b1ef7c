"""Caller-style uses of the ops learners' code calls; prints values and gradients."""
import torch
import torch.nn.functional as F

torch.set_printoptions(precision=6)
x = torch.tensor([[0.3, -0.7, 0.2], [0.5, 0.1, -0.4]], dtype=torch.float64, requires_grad=True)
for name in ["sinh", "cosh", "tan", "asin", "acos", "atan", "exp2"]:
    y = getattr(torch, name)(x)
    y.pow(2).sum().backward()
    print(name, [round(v, 10) for v in y.flatten().tolist()],
          [round(v, 10) for v in x.grad.flatten().tolist()])
    x.grad = None
    print("method", name, torch.equal(getattr(x, name)(), y))
y = torch.tensor([[1.0, -2.0, 0.0]], dtype=torch.float64, requires_grad=True)
out = torch.atan2(input=y, other=x)
(out * torch.arange(6.0, dtype=torch.float64).reshape(2, 3)).sum().backward()
print("atan2", [round(v, 10) for v in out.flatten().tolist()], y.grad.tolist())
origin = torch.zeros(2, requires_grad=True)
torch.atan2(origin, torch.zeros(2)).sum().backward()
print("atan2 at origin", origin.grad.tolist())
print("int inputs", torch.sinh(torch.tensor([1, 2])).dtype == torch.float32,
      torch.exp2(torch.tensor([3])).tolist())
print("isposinf", torch.isposinf(torch.tensor([1.0, float("inf"), -float("inf")])).tolist(),
      torch.isneginf(torch.tensor([1.0, float("inf"), -float("inf")])).tolist())
# torch.pow with a number base, as positional encodings write it
position = torch.arange(0, 8, 2, dtype=torch.float64, requires_grad=True)
div = torch.pow(10000.0, -position / 8)
div.sum().backward()
print("pow(number, tensor)", [round(v, 10) for v in div.tolist()],
      [round(v, 10) for v in position.grad.tolist()], torch.pow(2, torch.arange(4)).tolist())
print("flip", torch.flip(torch.arange(6).reshape(2, 3), dims=[1]).tolist(),
      torch.arange(6).reshape(2, 3).flip(dims=(0,)).tolist())
print("bincount", torch.bincount(torch.tensor([1, 1, 3]), minlength=6).tolist(),
      torch.bincount(torch.tensor([0, 2, 2]), weights=torch.tensor([0.5, 1.0, 2.0])).tolist(),
      torch.bincount(torch.tensor([0, 2]), weights=torch.tensor([1, 2])).dtype == torch.float64)
