"""nn.KLDivLoss (label smoothing), F.pad modes, lazy layers, normal's gradient."""
import torch
import torch.nn as nn
import torch.nn.functional as F

logp = torch.log_softmax(torch.tensor([[1.0, 2.0, 0.5], [0.1, 0.2, 3.0]],
                                      dtype=torch.float64), -1).requires_grad_(True)
target = torch.tensor([[0.8, 0.1, 0.1], [0.05, 0.05, 0.9]], dtype=torch.float64)
for reduction in ["sum", "batchmean", "none"]:
    loss = nn.KLDivLoss(reduction=reduction)(logp, target)
    loss.sum().backward()
    print("KLDivLoss", reduction, [round(v, 10) for v in loss.flatten().tolist()],
          [round(v, 10) for v in logp.grad.flatten().tolist()])
    logp.grad = None
print(nn.KLDivLoss(reduction="sum", log_target=True)(logp, target.log()).item())
x = torch.arange(20, dtype=torch.float64).reshape(1, 4, 5).requires_grad_(True)
for mode in ["reflect", "replicate", "circular"]:
    y = F.pad(x, (2, 1, 1, 2), mode=mode)
    (y * torch.arange(y.numel(), dtype=torch.float64).reshape(y.shape)).sum().backward()
    print("pad", mode, tuple(y.shape), y[0, :, :3].tolist(), x.grad[0, 0].tolist())
    x.grad = None
print("pad 2-D", F.pad(torch.arange(4.0).reshape(1, 4), (2, 2), mode="reflect").tolist())
lazy = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyBatchNorm1d(), nn.LazyLinear(2))
print(len(lazy.state_dict()), list(lazy.state_dict()))
try:
    lazy[0].weight.shape
except RuntimeError as exc:
    print("before forward:", str(exc)[:45])
optimizer = torch.optim.SGD(lazy.parameters(), lr=0.1)       # before the dry run, as torch
out = lazy(torch.ones(4, 5))
print(type(lazy[0]).__name__, tuple(lazy[0].weight.shape), type(lazy[2]).__name__,
      lazy[2].num_features, tuple(lazy[3].weight.shape), lazy[2].num_batches_tracked.item())
with torch.no_grad():
    for p in lazy.parameters():
        p.fill_(0.5)
out = lazy(torch.arange(20.0).reshape(4, 5) / 10)
out.sum().backward()
optimizer.step()
print([round(v, 6) for v in lazy[3].weight.flatten().tolist()])
fresh = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyBatchNorm1d(), nn.LazyLinear(2))
fresh.load_state_dict(lazy.state_dict())
print(tuple(fresh[0].weight.shape), torch.equal(fresh[3].weight, lazy[3].weight))
mean = torch.zeros(3, requires_grad=True)
std = torch.ones(3, requires_grad=True)
sample = torch.normal(mean, std)
sample.sum().backward()
print("normal", tuple(sample.shape), sample.requires_grad, mean.grad.tolist(), std.grad.tolist(),
      tuple(torch.normal(0.0, 1.0, size=(2, 3)).shape), torch.normal(2.0, 0.0, (2,)).tolist(),
      tuple(torch.normal(torch.zeros(2, 3), 1.0).shape),
      tuple(torch.normal(0.5, torch.ones(4)).shape))
