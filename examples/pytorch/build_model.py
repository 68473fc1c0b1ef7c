"""Build a neural network: an nn.Module with Flatten and a Sequential stack of Linear and
ReLU, class probabilities with Softmax, and a walk over the layers and parameters.

Adapted from PyTorch's "Learn the Basics" build-model tutorial (buildmodel_tutorial.py),
with a smaller hidden layer.
"""
import torch
from torch import nn

device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() \
    else "cpu"


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 32),
            nn.ReLU(),
            nn.Linear(32, 32),
            nn.ReLU(),
            nn.Linear(32, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


model = NeuralNetwork().to(device)

X = torch.rand(1, 28, 28, device=device)
logits = model(X)
pred_probab = nn.Softmax(dim=1)(logits)
y_pred = pred_probab.argmax(1)
print("probabilities", pred_probab.tolist())
print("Predicted class:", y_pred.item())

input_image = torch.rand(3, 28, 28)
flatten = nn.Flatten()
flat_image = flatten(input_image)
print("flat", list(flat_image.size()))
layer1 = nn.Linear(in_features=28 * 28, out_features=20)
hidden1 = layer1(flat_image)
print("hidden", list(hidden1.size()))
hidden1 = nn.ReLU()(hidden1)
print("after ReLU, zeros:", int((hidden1 == 0).sum().item()), "sum:", hidden1.sum().item())

seq_modules = nn.Sequential(flatten, layer1, nn.ReLU(), nn.Linear(20, 10))
logits = seq_modules(input_image)
softmax = nn.Softmax(dim=1)
pred_probab = softmax(logits)
print("rows sum to", pred_probab.sum(dim=1).tolist())

for name, param in model.named_parameters():
    print(f"Layer: {name} | Size: {list(param.size())} | "
          f"Values : {param[:2].flatten()[:3].tolist()}")
