"""Attention on images: a vision transformer and a small CNN on scikit-learn's 8x8 digits.

The data: the 1,797 handwritten digits (8 x 8 pixels, 16 grey levels) that scikit-learn
ships inside the package (``sklearn.datasets.load_digits``: no download), split into
1,437 for training and 360 held out, the same split for both models.

- CNN: Conv2d(1, 16, 3, padding=1) -> ReLU -> MaxPool2d(2) -> Conv2d(16, 32, 3, padding=1)
  -> BatchNorm2d -> ReLU -> AdaptiveAvgPool2d(1) -> Linear(32, 10).
- ViT: 2 x 2 patches (16 of them) embedded by Conv2d(kernel=stride=2), a class token, learned
  positions, 4 pre-LN transformer blocks (d_model 64, 4 heads), a head on the class token.

Both train with AdamW for a few epochs; the script prints the held-out accuracy of each, and
with ``--figures DIR`` saves what a learner looks at: the class token's attention rollout
drawn on digits, the positional embeddings' similarity grid, and the patch filters.

    python examples/vision_digits.py                 # about a minute on a 2-core CPU
    python examples/vision_digits.py --figures out/  # also the three pictures
"""
from __future__ import annotations

import argparse
import pathlib
import time
from typing import Dict, Optional, Tuple

import numpy as np

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn, optim


def load_digits(seed: int = 0) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test): images (N, 1, 8, 8) float32 scaled to [0, 1]."""
    from sklearn.datasets import load_digits as sklearn_digits
    digits = sklearn_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]    # (1797, 1, 8, 8)
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    test, train = order[:360], order[360:]
    return images[train], labels[train], images[test], labels[test]


class SmallCNN(nn.Module):
    """The convolutional baseline: two 3 x 3 convolutions, a pool, global average pooling."""

    def __init__(self, num_classes: int = 10):
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),      # (B, 16, 4, 4)
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),  # (B, 32, 4, 4)
            nn.AdaptiveAvgPool2d(1), nn.Flatten())                           # (B, 32)
        self.head = nn.Linear(32, num_classes)

    def forward(self, x: ta.Tensor) -> ta.Tensor:
        return self.head(self.features(x))


def train(model: nn.Module, data, epochs: int, lr: float, batch_size: int = 64,
          seed: int = 0) -> float:
    """AdamW with a cosine decay; returns the held-out accuracy."""
    x_train, y_train, x_test, y_test = data
    rng = np.random.default_rng(seed)
    steps = epochs * -(-len(y_train) // batch_size)
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.05)
    schedule = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    model.train()
    for _ in range(epochs):
        order = rng.permutation(len(y_train))
        for start in range(0, len(order), batch_size):
            batch = order[start:start + batch_size]
            loss = F.cross_entropy(model(ta.tensor(x_train[batch])), ta.tensor(y_train[batch]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            schedule.step()
    return accuracy(model, x_test, y_test)


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    model.eval()
    with ta.no_grad():
        predicted = model(ta.tensor(x)).numpy().argmax(axis=1)
    return float((predicted == y).mean())


def save_figures(vit: nn.VisionTransformer, x_test: np.ndarray, directory: pathlib.Path
                 ) -> Dict[str, pathlib.Path]:
    """The three pictures: rollout on digits, position similarity, patch filters."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    vit.eval()
    paths = {}
    with ta.no_grad():
        rollout = nn.attention_rollout(vit.attention_maps(ta.tensor(x_test[:8])))
    grid = vit.grid
    fig, axes = plt.subplots(2, 8, figsize=(12, 3.4))
    for i in range(8):
        axes[0, i].imshow(x_test[i, 0], cmap="gray_r")
        heat = rollout[i, 0, 1:].reshape(grid, grid)            # class token over patches
        axes[1, i].imshow(x_test[i, 0], cmap="gray_r")
        axes[1, i].imshow(np.kron(heat, np.ones((vit.patch_size, vit.patch_size))),
                          cmap="inferno", alpha=0.6)
        for ax in axes[:, i]:
            ax.set_xticks([])
            ax.set_yticks([])
    axes[0, 0].set_ylabel("digit")
    axes[1, 0].set_ylabel("rollout")
    fig.suptitle("Where the class token looks: attention rollout over the 2x2 patches")
    paths["rollout"] = directory / "vit_rollout.png"
    fig.savefig(paths["rollout"], dpi=100, bbox_inches="tight")
    plt.close(fig)

    pos = vit.pos_embed.detach().numpy()[0, 1:]                 # (N, D), patches only
    unit = pos / np.linalg.norm(pos, axis=1, keepdims=True)
    similarity = unit @ unit.T                                  # (N, N) cosine
    fig, axes = plt.subplots(grid, grid, figsize=(6, 6))
    for p in range(grid * grid):
        ax = axes[p // grid, p % grid]
        ax.imshow(similarity[p].reshape(grid, grid), cmap="viridis", vmin=-1, vmax=1)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("Cosine similarity of each patch's learned position to all others")
    paths["positions"] = directory / "vit_positions.png"
    fig.savefig(paths["positions"], dpi=100, bbox_inches="tight")
    plt.close(fig)

    filters = vit.patch_embed.weight.detach().numpy()[:, 0]    # (D, P, P)
    fig, axes = plt.subplots(4, 8, figsize=(8, 4))
    for i, ax in enumerate(axes.flat):
        ax.imshow(filters[i], cmap="RdBu_r")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("The first 32 patch-embedding filters (Conv2d, kernel = stride = 2)")
    paths["filters"] = directory / "vit_filters.png"
    fig.savefig(paths["filters"], dpi=100, bbox_inches="tight")
    plt.close(fig)
    return paths


def main(argv: Optional[list] = None) -> Dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30, help="epochs for each model")
    parser.add_argument("--figures", type=pathlib.Path, default=None,
                        help="save the three ViT pictures into this folder")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    data = load_digits(args.seed)
    results = {}
    ta.manual_seed(args.seed)
    start = time.perf_counter()
    results["cnn"] = train(SmallCNN(), data, args.epochs, lr=3e-3, seed=args.seed)
    print(f"small CNN: held-out accuracy {results['cnn']:.3f} "
          f"({time.perf_counter() - start:.0f} s)")
    ta.manual_seed(args.seed)
    vit = nn.VisionTransformer(image_size=8, patch_size=2, d_model=64, depth=4, num_heads=4)
    start = time.perf_counter()
    results["vit"] = train(vit, data, args.epochs, lr=1e-3, seed=args.seed)
    print(f"ViT:       held-out accuracy {results['vit']:.3f} "
          f"({time.perf_counter() - start:.0f} s)")
    if args.figures is not None:
        for name, path in save_figures(vit, data[2], args.figures).items():
            print(f"saved {name}: {path}")
    return results


if __name__ == "__main__":
    main()
