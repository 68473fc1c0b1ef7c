"""Mixed precision, watched in NumPy: autocast's per-op dtypes, float16 gradients that flush
to zero, and the GradScaler that saves them.

    python examples/mixed_precision.py            # the figures of docs/precision_memory_time.md
    python examples/mixed_precision.py --quick    # fewer steps (seconds)

1. Inside ``tinyattn.autocast("cpu")`` a linear layer runs in bfloat16, its loss in float32.
2. A 5-layer MLP with float32 parameters runs its forward under ``autocast("cpu",
   dtype="float16")``. Its gradients are tiny (a mean over many outputs of small errors):
   in float16 many flush to zero. The script prints, per layer, the fraction of weight
   gradients that are exactly zero without scaling and with a scale of 2**16.
3. It trains the model three ways for the same Adam steps: float32, float16 autocast
   without scaling, and float16 autocast with ``GradScaler``, and prints the losses.
"""
from __future__ import annotations

import argparse
from typing import Dict, List

import numpy as np

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

WIDTH, DEPTH, BATCH, OUTPUTS = 64, 5, 256, 32


def make_model(seed: int) -> nn.Sequential:
    ta.manual_seed(seed)
    layers: List[nn.Module] = []
    for i in range(DEPTH):
        layers.append(nn.Linear(WIDTH, OUTPUTS if i == DEPTH - 1 else WIDTH))
        if i < DEPTH - 1:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


def make_data(seed: int, error: float = 3e-4):
    """Inputs and targets that the freshly initialised model (make_model(1)) misses by
    about ``error``: the situation late in training, when the errors, and so the
    gradients, are small."""
    rng = np.random.default_rng(seed)
    x = ta.tensor(rng.standard_normal((BATCH, WIDTH)).astype(np.float32))
    with ta.no_grad():
        start = make_model(seed=1)(x).numpy()
    teacher = rng.standard_normal((WIDTH, OUTPUTS)).astype(np.float32) / np.sqrt(WIDTH)
    y = start + error * np.tanh(x.numpy() @ teacher)
    return x, ta.tensor(y.astype(np.float32))


def linears(model: nn.Sequential) -> List[nn.Linear]:
    return [m for m in model if isinstance(m, nn.Linear)]


def loss_of(model: nn.Sequential, x, y, dtype: str = "") -> ta.Tensor:
    if not dtype:
        return F.mse_loss(model(x), y)
    with ta.autocast("cpu", dtype=dtype):
        return F.mse_loss(model(x), y)                 # linear: dtype; mse_loss: float32


def zero_fractions(model: nn.Sequential, x, y, scale: float) -> List[float]:
    """Per linear layer: the fraction of weight-gradient entries that are exactly 0 after a
    float16 autocast backward of ``loss * scale``."""
    model.zero_grad()
    (loss_of(model, x, y, "float16") * scale).backward()
    return [float((layer.weight.grad.numpy() == 0).mean()) for layer in linears(model)]


def train(mode: str, steps: int, x, y) -> Dict[str, float]:
    model = make_model(seed=1)
    opt = ta.optim.Adam(model.parameters(), lr=1e-4)
    scaler = ta.amp.GradScaler("cpu", enabled=(mode == "float16 + GradScaler"))
    first = None
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_of(model, x, y, "" if mode == "float32" else "float16")
        first = loss.item() if first is None else first
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    with ta.no_grad():
        final = loss_of(model, x, y).item()           # judged in float32
    return {"first": first, "final": final, "scale": scaler.get_scale()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer training steps")
    args = parser.parse_args()
    steps = 10 if args.quick else 60

    print("1. dtypes inside autocast('cpu')")
    x, y = make_data(seed=0)
    layer = nn.Linear(WIDTH, OUTPUTS)
    with ta.autocast("cpu"):
        out = layer(x)
        loss = F.mse_loss(out, y)
    print(f"   parameters {layer.weight.dtype}, linear output {out.dtype}, "
          f"mse_loss {loss.dtype}")
    loss.backward()
    print(f"   weight gradient {layer.weight.grad.dtype}")

    print("2. fraction of weight gradients that are exactly zero (float16 autocast)")
    model = make_model(seed=1)
    plain = zero_fractions(model, x, y, scale=1.0)
    scaled = zero_fractions(model, x, y, scale=2.0 ** 16)
    model.zero_grad()
    loss_of(model, x, y).backward()
    exact = [float((layer.weight.grad.numpy() == 0).mean()) for layer in linears(model)]
    print("   layer   float32   float16   float16 x 2**16")
    for i, (e, p, s) in enumerate(zip(exact, plain, scaled)):
        print(f"   {i:5d}   {e:7.1%}   {p:7.1%}   {s:7.1%}")

    print(f"3. training, {steps} Adam steps (the last loss computed in float32)")
    for mode in ("float32", "float16", "float16 + GradScaler"):
        result = train(mode, steps, x, y)
        print(f"   {mode:22s} loss {result['first']:.3e} -> {result['final']:.3e}"
              + (f"  (final scale {result['scale']:g})" if "Scaler" in mode else ""))


if __name__ == "__main__":
    main()
