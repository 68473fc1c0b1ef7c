"""What is torch.nn really? Part 1: logistic regression on MNIST-shaped data with nothing
but tensor operations: hand-written log_softmax, negative log-likelihood and accuracy, and
a training loop that updates the weights under torch.no_grad().

Adapted from PyTorch's nn_tutorial.py (by Jeremy Howard): random 784-pixel images with
labels from a fixed random linear teacher replace MNIST; the shapes are MNIST's.
"""
import math

import torch

teacher = torch.randn(784, 10)
x_train = torch.rand(512, 784)
y_train = (x_train @ teacher).argmax(dim=1)
n, c = x_train.shape
print(n, c, y_train.min().item(), y_train.max().item())

weights = torch.randn(784, 10) / math.sqrt(784)
weights.requires_grad_()
bias = torch.zeros(10, requires_grad=True)


def log_softmax(x):
    return x - x.exp().sum(-1).log().unsqueeze(-1)


def model(xb):
    return log_softmax(xb @ weights + bias)


def nll(input, target):
    return -input[range(target.shape[0]), target].mean()


def accuracy(out, yb):
    preds = torch.argmax(out, dim=1)
    return (preds == yb).float().mean()


bs = 64
xb, yb = x_train[0:bs], y_train[0:bs]
preds = model(xb)
print("first prediction", preds[0].tolist(), list(preds.shape))
loss_func = nll
print("loss", loss_func(preds, yb).item(), "accuracy", accuracy(preds, yb).item())

lr = 0.5
epochs = 2
for epoch in range(epochs):
    for i in range((n - 1) // bs + 1):
        start_i = i * bs
        end_i = start_i + bs
        xb = x_train[start_i:end_i]
        yb = y_train[start_i:end_i]
        pred = model(xb)
        loss = loss_func(pred, yb)
        loss.backward()
        with torch.no_grad():
            weights -= weights.grad * lr
            bias -= bias.grad * lr
            weights.grad.zero_()
            bias.grad.zero_()

print("after training: loss", loss_func(model(xb), yb).item(),
      "accuracy", accuracy(model(xb), yb).item())
