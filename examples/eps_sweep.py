"""How big should eps be in a finite-difference gradient check? Sweep it and see.

    python examples/eps_sweep.py                 # prints a table, saves runs/eps_sweep.png
    python examples/eps_sweep.py --out plot.png

For f = softmax (a (4, 8) input, projected on a fixed random direction), the script compares
the central difference (f(x + eps u) - f(x - eps u)) / (2 eps) with the exact directional
derivative from tinyattn's backward, for eps from 1e-12 to 1, with the forward evaluated in
float64 and in float32. The relative error has two regimes:

- truncation, on the right: the central difference is exact for a quadratic; the first term
  it misses is eps^2 f''' / 6, so the error falls as eps^2 (slope +2 on the log-log plot);
- round-off, on the left: f(x + eps u) and f(x - eps u) each carry a rounding error of about
  machine epsilon * |f|, and dividing their difference by 2 eps blows it up as 1 / eps
  (slope -1). Below eps ~ machine epsilon, x + eps u rounds back to x and the difference is 0.

The best eps balances the two, near machine_epsilon^(1/3): about 6e-6 for float64 (machine
epsilon 2.2e-16) and 5e-3 for float32 (1.2e-7), where the error is of order
machine_epsilon^(2/3). The script prints the minima it measures; with the default seed they
were 1.5e-11 at eps = 1e-5 (float64) and 2.2e-6 at eps = 1e-2 (float32); near its minimum
the float32 curve is ragged (2e-6 to 9e-4 for eps from 1e-4 to 1e-2). At eps = 1e-6,
tinyattn.gradcheck's choice, float64 is off by 1.6e-10 and float32 by 4e-2: a float32 check
would drown many real gradient bugs, which is why ``tinyattn.gradcheck`` refuses float32.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, Optional, Sequence

import numpy as np

import tinyattn as ta
import tinyattn.functional as F

__all__ = ["sweep", "main"]

EPSILONS = np.logspace(-12, 0, 49)
MACHINE_EPS = {"float64": float(np.finfo(np.float64).eps),
               "float32": float(np.finfo(np.float32).eps)}


def _projected(x: np.ndarray, v: np.ndarray, dtype: str) -> float:
    """v . softmax(x), with the forward run in ``dtype``; the dot product in float64."""
    with ta.no_grad():
        y = F.softmax(ta.tensor(x.astype(dtype)), dim=-1).numpy()
    return float(np.dot(y.astype(np.float64).ravel(), v.ravel()))


def sweep(dtype: str, epsilons: Optional[Sequence[float]] = None, seed: int = 0) -> List[float]:
    """Relative error of the central difference of v . softmax(x) along u, for each eps
    (default: EPSILONS, 1e-12 to 1)."""
    epsilons = EPSILONS if epsilons is None else epsilons
    rng = np.random.default_rng(seed)
    x = 2.0 * rng.standard_normal((4, 8))
    u = rng.standard_normal(x.shape)
    v = rng.standard_normal(x.shape)
    xt = ta.tensor(x, requires_grad=True)                   # the exact answer, in float64
    F.softmax(xt, dim=-1).backward(v)
    exact = float(np.dot(xt.grad.numpy().ravel(), u.ravel()))       # v^T J u
    errors = []
    for eps in epsilons:
        # The perturbed inputs are rounded to ``dtype`` before the forward, as they would be.
        plus = _projected((x + eps * u).astype(dtype), v, dtype)
        minus = _projected((x - eps * u).astype(dtype), v, dtype)
        numeric = (plus - minus) / (2.0 * eps)
        errors.append(abs(numeric - exact) / abs(exact))
    return errors


def _table(results: Dict[str, List[float]]) -> str:
    lines = [f"{'eps':>9}  {'float64 rel. error':>18}  {'float32 rel. error':>18}"]
    for i in range(0, len(EPSILONS), 4):
        lines.append(f"{EPSILONS[i]:9.1e}  {results['float64'][i]:18.2e}  "
                     f"{results['float32'][i]:18.2e}")
    for dtype, errors in results.items():
        best = int(np.argmin(errors))
        lines.append(f"{dtype}: smallest error {errors[best]:.1e} at eps = {EPSILONS[best]:.1e} "
                     f"(machine epsilon {MACHINE_EPS[dtype]:.1e}, "
                     f"its cube root {MACHINE_EPS[dtype] ** (1 / 3):.1e})")
    return "\n".join(lines)


def _plot(results: Dict[str, List[float]], out: str) -> None:
    import matplotlib                                      # noqa: PLC0415 - optional extra
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt                        # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for dtype, color in (("float64", "tab:blue"), ("float32", "tab:orange")):
        errors = np.maximum(results[dtype], 1e-17)          # an exact 0 would vanish on a log axis
        ax.loglog(EPSILONS, errors, "o-", ms=3, color=color, label=dtype)
        machine = MACHINE_EPS[dtype]
        ax.loglog(EPSILONS, machine / EPSILONS, ":", color=color, lw=1,
                  label=f"round-off ~ {machine:.0e} / eps")
    anchor = int(np.argmin(np.abs(EPSILONS - 1e-2)))       # deep in the truncation regime
    scale = results["float64"][anchor] / EPSILONS[anchor] ** 2
    ax.loglog(EPSILONS, scale * EPSILONS ** 2, "--", color="gray", lw=1,
              label="truncation ~ eps^2")
    ax.axvline(1e-6, color="black", lw=0.8, alpha=0.5)
    ax.text(1.2e-6, 3e-15, "tinyattn.gradcheck\neps = 1e-6", fontsize=8)
    ax.set_ylim(1e-15, 1e2)
    ax.set_xlabel("eps")
    ax.set_ylabel("relative error of the central difference")
    ax.set_title("Gradient check error against eps (softmax, directional derivative)")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("runs", "eps_sweep.png"),
                        help="where to save the plot (PNG; default runs/eps_sweep.png)")
    parser.add_argument("--quick", action="store_true",
                        help="accepted for the smoke test: the sweep takes about a second")
    args = parser.parse_args(argv)
    results = {dtype: sweep(dtype) for dtype in ("float64", "float32")}
    print(_table(results))
    print("Right of each minimum the error falls as eps^2 (truncation); left of it, it grows "
          "as 1/eps (round-off).")
    try:
        _plot(results, args.out)
    except ImportError:
        print('matplotlib is not installed, so no plot: pip install "tinyattn[viz]"')
        return 0
    print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
