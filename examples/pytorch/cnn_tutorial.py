"""Convolutional networks as the tutorials write them: the CIFAR-10 classifier of PyTorch's
"Training a Classifier" tutorial (Conv2d, MaxPool2d, F.relu, torch.flatten, SGD with
momentum), a FashionMNIST-style Sequential (padding, BatchNorm2d, Dropout2d, AdaptiveAvgPool2d),
and a vision transformer's patch embedding (Conv2d with kernel = stride) feeding
nn.TransformerEncoder. Random images stand in for the datasets (no download).

The convolution before BatchNorm2d has bias=False, as ResNets write it: BatchNorm removes
the mean, so that bias's gradient is zero up to round-off, and Adam's first steps (about
lr * sign(g)) would turn two frameworks' different round-off into different weights.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)  # flatten all dimensions except batch
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


torch.manual_seed(0)
net = Net()
print("conv1 weight:", tuple(net.conv1.weight.shape))
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
inputs = torch.randn(8, 3, 32, 32)
labels = torch.randint(0, 10, (8,))
for epoch in range(4):
    optimizer.zero_grad()
    outputs = net(inputs)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
    print(f"[{epoch + 1}] loss: {loss.item():.6f}")
_, predicted = torch.max(outputs, 1)
print("predicted:", predicted.tolist())

fashion = nn.Sequential(
    nn.Conv2d(1, 8, kernel_size=3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
    nn.MaxPool2d(2), nn.Dropout2d(0.0),
    nn.Conv2d(8, 16, kernel_size=3, padding="same", padding_mode="reflect"), nn.ReLU(),
    nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(16, 10))
adam = optim.Adam(fashion.parameters(), lr=1e-3)
images = torch.rand(16, 1, 28, 28)
targets = torch.randint(0, 10, (16,))
for step in range(3):
    loss = F.cross_entropy(fashion(images), targets)
    adam.zero_grad()
    loss.backward()
    adam.step()
    print(f"fashion step {step}: loss {loss.item():.6f}")
fashion.eval()
print("running mean:", fashion[1].running_mean[:4].tolist())


class PatchEmbed(nn.Module):
    def __init__(self, img_size=8, patch_size=2, in_chans=1, embed_dim=16):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)  # (B, N, D)


class TinyViT(nn.Module):
    def __init__(self, num_classes=10, dim=16):
        super().__init__()
        self.patch = PatchEmbed(embed_dim=dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, 17, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, 2, dim_feedforward=32, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        return self.head(self.encoder(x)[:, 0])


vit = TinyViT()
opt = optim.AdamW(vit.parameters(), lr=3e-3)
digits = torch.rand(8, 1, 8, 8)
classes = torch.randint(0, 10, (8,))
for step in range(3):
    loss = F.cross_entropy(vit(digits), classes)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"vit step {step}: loss {loss.item():.6f}")
