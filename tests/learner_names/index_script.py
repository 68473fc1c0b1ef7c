"""index_fill, scatter with a reduction, scatter_reduce: values and gradients."""
import torch

base = torch.arange(12, dtype=torch.float64).reshape(3, 4) / 4 + 1
x = base.clone().requires_grad_(True)
y = x.index_fill(1, torch.tensor([0, 2]), -1.0)
(y * base).sum().backward()
print("index_fill", y.tolist(), x.grad.tolist())
z = base.clone()
z.index_fill_(0, torch.tensor([1]), 7.0)
print("index_fill_", z.tolist())
index = torch.tensor([[0, 1, 0, 2], [0, 0, 2, 2]])
print("scatter add", torch.zeros(3, 4).scatter(0, index, 1.5, reduce="add").tolist())
print("scatter multiply", torch.full((3, 4), 2.0).scatter(0, index, 3.0,
                                                           reduce="multiply").tolist())
src = torch.tensor([[1.5, -2.0, 3.0, 0.5], [4.0, 0.0, -6.0, 0.5]], dtype=torch.float64)
for reduce in ["sum", "prod", "mean", "amax", "amin"]:
    for include_self in [True, False]:
        x = base.clone().requires_grad_(True)
        s = src.clone().requires_grad_(True)
        out = x.scatter_reduce(0, index, s, reduce, include_self=include_self)
        (out * base).sum().backward()
        print(reduce, include_self, [round(v, 10) for v in out.flatten().tolist()],
              [round(v, 10) for v in x.grad.flatten().tolist()],
              [round(v, 10) for v in s.grad.flatten().tolist()])
ties = torch.tensor([[1.0, 2.0]], requires_grad=True)
out = torch.tensor([2.0, 2.0]).scatter_reduce(0, torch.tensor([1, 1]), ties[0], "amax")
out.sum().backward()
print("amax ties", out.tolist(), ties.grad.tolist())
