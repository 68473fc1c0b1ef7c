"""The polynomial as nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1)) on (x, x^2, x^3),
updated by hand under torch.no_grad().

Adapted from PyTorch's "Learning PyTorch with Examples" (polynomial_nn.py), shrunk. Runs in
float32, the default, as the tutorial does.
"""
import math

import torch

x = torch.linspace(-math.pi, math.pi, 200)
y = torch.sin(x)

p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)               # (200, 1) ** (3,) -> (200, 3)

model = torch.nn.Sequential(
    torch.nn.Linear(3, 1),
    torch.nn.Flatten(0, 1),
)
loss_fn = torch.nn.MSELoss(reduction="sum")

learning_rate = 1e-5
for t in range(300):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    if t % 100 == 99:
        print(t, loss.item())
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad

linear_layer = model[0]
print(f"Result: y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + "
      f"{linear_layer.weight[:, 1].item()} x^2 + {linear_layer.weight[:, 2].item()} x^3")
