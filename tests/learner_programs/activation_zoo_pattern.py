"""Activation functions written by hand from exp / where / comparisons, compared through their
gradients, then an MLP that reuses one activation object after every Linear of a Sequential
(printed: torch lists the shared child at each index), trained a few steps on a random_split
of a TensorDataset, saved with its config as JSON plus a state_dict file, and reloaded."""
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data


class Act(nn.Module):
    def __init__(self, **config):
        super().__init__()
        self.config = {"name": type(self).__name__, **config}


class ExpTanh(Act):
    def forward(self, x):
        up, down = torch.exp(x), torch.exp(-x)
        return (up - down) / (up + down)


class ExpSigmoid(Act):
    def forward(self, x):
        return 1 / (1 + torch.exp(-x))


class MaskRelu(Act):
    def forward(self, x):
        return x * (x > 0).float()


class Leaky(Act):
    def __init__(self, alpha=0.1):
        super().__init__(alpha=alpha)

    def forward(self, x):
        return torch.where(x > 0, x, self.config["alpha"] * x)


class ExpElu(Act):
    def forward(self, x):
        return torch.where(x > 0, x, torch.exp(x) - 1)


KINDS = {cls.__name__.lower(): cls for cls in (ExpTanh, ExpSigmoid, MaskRelu, Leaky, ExpElu)}

grid = torch.linspace(-60, 60, 25)
for name, cls in KINDS.items():
    x = grid.clone().requires_grad_()
    cls()(x).sum().backward()
    print(name, [round(v, 6) for v in x.grad.tolist()])


class Mlp(nn.Module):
    def __init__(self, act, sizes=(12, 16, 8, 3)):
        super().__init__()
        layers = []
        for n_in, n_out in zip(sizes[:-2], sizes[1:-1]):
            layers += [nn.Linear(n_in, n_out), act]
        layers.append(nn.Linear(sizes[-2], sizes[-1]))
        self.layers = nn.Sequential(*layers)
        self.config = {"act": act.config, "sizes": list(sizes)}

    def forward(self, x):
        return self.layers(x.view(x.size(0), -1))


inputs = torch.randn(90, 3, 4)
targets = torch.randint(0, 3, (90,))
train_set, val_set = data.random_split(data.TensorDataset(inputs, targets), [60, 30])
print(len(train_set), len(val_set), sorted(val_set.indices)[:6])
folder = tempfile.mkdtemp()
for name, cls in KINDS.items():
    torch.manual_seed(0)
    net = Mlp(cls())
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    hits, seen = 0., 0
    for xb, yb in data.DataLoader(train_set, batch_size=16, shuffle=True, drop_last=True):
        opt.zero_grad()
        out = net(xb)
        loss = F.cross_entropy(out, yb)
        loss.backward()
        opt.step()
        hits += (out.argmax(dim=-1) == yb).sum()
        seen += yb.shape[0]
    acc = hits / seen
    print(name, type(acc).__name__, acc.dtype, f"{acc * 100.0:05.2f}% {loss.item():.6f}")
    with open(os.path.join(folder, name + ".config"), "w") as f:
        json.dump(net.config, f)
    torch.save(net.state_dict(), os.path.join(folder, name + ".tar"))
    with open(os.path.join(folder, name + ".config")) as f:
        config = json.load(f)
    act_config = config.pop("act")
    again = Mlp(KINDS[act_config.pop("name").lower()](**act_config), tuple(config["sizes"]))
    print(again.load_state_dict(torch.load(os.path.join(folder, name + ".tar"))))
    with torch.no_grad():
        xv, yv = next(iter(data.DataLoader(val_set, batch_size=30)))
        print((again(xv).argmax(-1) == yv).sum().item(), torch.equal(again(xv), net(xv)))
print(again)
