"""Datasets and DataLoaders: a custom Dataset (__len__ and __getitem__) with a transform and a
target transform, a DataLoader that shuffles and batches it, iterating one batch by hand,
and a short training loop over it.

Adapted from PyTorch's "Learn the Basics" data and transforms tutorials: the images are
random 6x6 arrays kept in memory instead of FashionMNIST files on disk.
"""
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class CustomImageDataset(Dataset):
    def __init__(self, images, labels, transform=None, target_transform=None):
        self.images = images
        self.labels = labels
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        image = self.images[idx]
        label = int(self.labels[idx])
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            label = self.target_transform(label)
        return image, label


images = torch.rand(40, 6, 6, dtype=torch.float64)
labels = (images.sum(dim=(1, 2)) > 18).long()
training_data = CustomImageDataset(
    images, labels,
    transform=lambda img: (img - 0.5) / 0.5,
    target_transform=lambda y: torch.nn.functional.one_hot(torch.tensor(y), 2).double())
print("length", len(training_data))
img, label = training_data[0]
print("first sample", img[0].tolist(), label.tolist())

train_dataloader = DataLoader(training_data, batch_size=8, shuffle=True)
train_features, train_labels = next(iter(train_dataloader))
print(f"Feature batch shape: {list(train_features.size())}")
print(f"Labels batch shape: {list(train_labels.size())}")
print("labels", train_labels.argmax(1).tolist())

model = nn.Sequential(nn.Flatten(), nn.Linear(36, 2)).double()
optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
loss_fn = nn.BCEWithLogitsLoss()
for epoch in range(3):
    total = 0.0
    for features, targets in train_dataloader:
        loss = loss_fn(model(features), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print("epoch", epoch, "mean loss", total / len(train_dataloader))
