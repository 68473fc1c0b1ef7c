"""Adjusting the learning rate: per-parameter options (two parameter groups), SGD with
momentum and Nesterov, ExponentialLR and MultiStepLR chained, StepLR, LambdaLR,
CosineAnnealingLR and Adam's learning rate through a schedule.

Adapted from the examples in PyTorch's torch.optim documentation ("Per-parameter options",
"How to adjust learning rate"), on a small regression model.
"""
import torch
from torch import nn, optim
from torch.optim.lr_scheduler import (CosineAnnealingLR, ExponentialLR, LambdaLR,
                                      MultiStepLR, StepLR)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.base = nn.Sequential(nn.Linear(6, 16), nn.Tanh())
        self.classifier = nn.Linear(16, 1)

    def forward(self, x):
        return self.classifier(self.base(x)).squeeze(-1)


X = torch.randn(32, 6, dtype=torch.float64)
y = torch.sin(X.sum(dim=1))
loss_fn = nn.MSELoss()


def train(name, optimizer, schedulers, epochs=6):
    for epoch in range(epochs):
        loss = loss_fn(model(X), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        for scheduler in schedulers:
            scheduler.step()
        lrs = [group["lr"] for group in optimizer.param_groups]
        print(name, epoch, "loss", loss.item(), "lr", lrs)


model = Model().double()
optimizer = optim.SGD([
    {"params": model.base.parameters(), "lr": 1e-2},
    {"params": model.classifier.parameters()},
], lr=1e-1, momentum=0.9)
train("exponential+multistep", optimizer,
      [ExponentialLR(optimizer, gamma=0.9), MultiStepLR(optimizer, milestones=[2, 4],
                                                        gamma=0.5)])

optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                      weight_decay=1e-3)
train("step", optimizer, [StepLR(optimizer, step_size=2, gamma=0.5)])

optimizer = optim.Adam(model.parameters(), lr=0.01)
train("lambda", optimizer, [LambdaLR(optimizer, lr_lambda=lambda epoch: 0.95 ** epoch)])

optimizer = optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.01)
train("cosine", optimizer, [CosineAnnealingLR(optimizer, T_max=6, eta_min=1e-4)])
