"""What is torch.nn really? Part 2: the same model refactored step by step: F.cross_entropy,
an nn.Module with nn.Parameter, nn.Linear, torch.optim, TensorDataset, DataLoader with
shuffling, validation, and the final fit() / get_data() / loss_batch() loop.

Adapted from PyTorch's nn_tutorial.py (by Jeremy Howard) on random MNIST-shaped data. The
convolutional part at the end of the tutorial is left out (tinyattn has no Conv2d).
"""
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

teacher = torch.randn(784, 10)
x_train, x_valid = torch.rand(512, 784), torch.rand(256, 784)
y_train, y_valid = (x_train @ teacher).argmax(1), (x_valid @ teacher).argmax(1)
n, c = x_train.shape
bs, lr, epochs = 64, 0.5, 2
loss_func = F.cross_entropy


def accuracy(out, yb):
    return (torch.argmax(out, dim=1) == yb).float().mean()


class Mnist_Logistic(nn.Module):
    def __init__(self):
        super().__init__()
        self.weights = nn.Parameter(torch.randn(784, 10) / math.sqrt(784))
        self.bias = nn.Parameter(torch.zeros(10))

    def forward(self, xb):
        return xb @ self.weights + self.bias


model = Mnist_Logistic()
xb, yb = x_train[0:bs], y_train[0:bs]
print("nn.Module loss", loss_func(model(xb), yb).item())


def fit_by_hand():
    for epoch in range(epochs):
        for i in range((n - 1) // bs + 1):
            xb = x_train[i * bs:i * bs + bs]
            yb = y_train[i * bs:i * bs + bs]
            loss = loss_func(model(xb), yb)
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= p.grad * lr
                model.zero_grad()


fit_by_hand()
print("after fit_by_hand", loss_func(model(xb), yb).item())


class Mnist_Logistic(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(784, 10)

    def forward(self, xb):
        return self.lin(xb)


def get_model():
    model = Mnist_Logistic()
    return model, optim.SGD(model.parameters(), lr=lr)


model, opt = get_model()
print("nn.Linear loss", loss_func(model(xb), yb).item())
train_ds = TensorDataset(x_train, y_train)
for epoch in range(epochs):
    for i in range((n - 1) // bs + 1):
        xb, yb = train_ds[i * bs:i * bs + bs]
        loss = loss_func(model(xb), yb)
        loss.backward()
        opt.step()
        opt.zero_grad()
print("optim + TensorDataset", loss_func(model(xb), yb).item(), accuracy(model(xb), yb).item())


def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    for epoch in range(epochs):
        model.train()
        for xb, yb in train_dl:
            loss_batch(model, loss_func, xb, yb, opt)
        model.eval()
        with torch.no_grad():
            losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
        print(epoch, val_loss)


def get_data(train_ds, valid_ds, bs):
    return (DataLoader(train_ds, batch_size=bs, shuffle=True),
            DataLoader(valid_ds, batch_size=bs * 2))


train_dl, valid_dl = get_data(train_ds, TensorDataset(x_valid, y_valid), bs)
model, opt = get_model()
fit(epochs, model, loss_func, opt, train_dl, valid_dl)
