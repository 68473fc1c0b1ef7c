"""Save and load a model: train a small classifier, save its state_dict with torch.save,
load it into a fresh model with torch.load(weights_only=True) and load_state_dict, and
check that both predict the same.

Adapted from PyTorch's "Learn the Basics" quickstart and save/load tutorials.
"""
import os
import tempfile

import torch
from torch import nn


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(8 * 8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        return self.linear_relu_stack(self.flatten(x))


X = torch.rand(64, 8, 8, dtype=torch.float64)
y = (X.flatten(1) @ torch.randn(64, 4, dtype=torch.float64)).argmax(1)
model = NeuralNetwork().double()
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
for step in range(20):
    loss = loss_fn(model(X), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 4:
        print("step", step, "loss", loss.item())

with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "model.pth")
    torch.save(model.state_dict(), path)
    print("Saved PyTorch Model State to model.pth")
    model2 = NeuralNetwork().double()
    model2.load_state_dict(torch.load(path, weights_only=True))
model2.eval()
with torch.no_grad():
    pred, pred2 = model(X[:5]), model2(X[:5])
print("predicted", pred2.argmax(1).tolist(), "same:", torch.equal(pred, pred2))
print("first logits", pred2[0].tolist())
print("keys", list(model2.state_dict().keys()))
