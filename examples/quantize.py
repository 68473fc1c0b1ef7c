"""Dynamic int8 quantization of a trained classifier: size, accuracy and speed before/after.

Trains examples/classify.py's attention classifier (word order decides the label), then
``tinyattn.quantization.quantize_dynamic(model, {nn.Linear}, dtype=tinyattn.qint8)`` replaces
its linear layers by int8 ones (docs/precision_memory_time.md#dynamic-quantization).

    python examples/quantize.py            # about 20 s on a 2-core CPU
    python examples/quantize.py --quick    # a shorter training run
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

import tinyattn as ta
from tinyattn import nn
from tinyattn.quantization import DynamicQuantizedLinear, quantize_dynamic

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from classify import AttentionClassifier, accuracy, fit, make_data  # noqa: E402


def size_on_disk(model: nn.Module) -> int:
    """Bytes of ``tinyattn.save(model.state_dict())``, as torch tutorials measure it."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.pt")
        ta.save(model.state_dict(), path)
        return os.path.getsize(path)


def seconds_per_pass(model: nn.Module, ids: np.ndarray, repeats: int = 5) -> float:
    with ta.no_grad():
        model(ta.tensor(ids))
        start = time.perf_counter()
        for _ in range(repeats):
            model(ta.tensor(ids))
    return (time.perf_counter() - start) / repeats


def logit_gap(model: nn.Module, quantized: nn.Module, ids: np.ndarray) -> tuple:
    """(largest |int8 logit - float logit| / largest |float logit|, share of equal argmax)."""
    with ta.no_grad():
        exact, approx = model(ta.tensor(ids)).numpy(), quantized(ta.tensor(ids)).numpy()
    same = float((exact.argmax(axis=1) == approx.argmax(axis=1)).mean())
    return float(np.abs(approx - exact).max() / np.abs(exact).max()), same


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 training steps, not 600")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    ta.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    train, test = make_data(rng, 5000), make_data(rng, 1000)
    model = AttentionClassifier()
    fit(model, train, 300 if args.quick else 600, 64, rng)
    quantized = quantize_dynamic(model, {nn.Linear}, dtype=ta.qint8)
    print(quantized)
    count = sum(isinstance(m, DynamicQuantizedLinear) for m in quantized.modules())
    results = {"float accuracy": accuracy(model, test), "int8 accuracy": accuracy(quantized, test),
               "float bytes": size_on_disk(model), "int8 bytes": size_on_disk(quantized),
               "float s": seconds_per_pass(model, test[0]),
               "int8 s": seconds_per_pass(quantized, test[0]),
               "logit gap": logit_gap(model, quantized, test[0])}
    print(f"\n{count} linear layers quantized to int8")
    print(f"{'':14}{'float32':>12}{'int8':>12}")
    print(f"{'accuracy':14}{100 * results['float accuracy']:11.1f}%"
          f"{100 * results['int8 accuracy']:11.1f}%")
    print(f"{'size (bytes)':14}{results['float bytes']:12d}{results['int8 bytes']:12d}")
    print(f"{'1000 inputs':14}{results['float s'] * 1e3:10.1f}ms{results['int8 s'] * 1e3:10.1f}ms")
    gap, same = results["logit gap"]
    print(f"logits, int8 vs float: largest difference {100 * gap:.2f}% of the largest logit; "
          f"the same class for {100 * same:.1f}% of the inputs")
    return results


if __name__ == "__main__":
    main()
