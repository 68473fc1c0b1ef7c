"""Run the PyTorch programs of examples/pytorch/ with real torch or through run-torch, from the
same random numbers, and print what each printed (a helper of test_pytorch_programs.py).

    python tests/pytorch_parity.py torch    examples/pytorch/a.py ...   # JSON on stdout
    python tests/pytorch_parity.py tinyattn examples/pytorch/a.py ...

The frameworks' generators differ, so both runs replace the primitive random draws with one
NumPy generator, reseeded before each program, read in call order:

- tinyattn: ``backend.default_generator`` returns it. Every draw tinyattn makes without an
  explicit generator goes through it (rand, randn, randint, multinomial, ``uniform_``,
  ``normal_``, layer initialisation, DataLoader shuffling).
- torch: each primitive draw is replaced by the same NumPy call tinyattn makes for it, with
  the same arithmetic in the same dtype: ``torch.rand``/``randn``/``randint``/``randperm``/
  ``*_like``/``multinomial``, ``Tensor.uniform_``/``normal_`` (what ``nn.init`` and every
  layer's ``reset_parameters`` call), and ``RandomSampler.__iter__`` (torch's draws a second,
  unused permutation at the end of each pass; tinyattn's draws one per pass), and the
  ``randperm`` of ``random_split`` (one NumPy permutation on both sides).

An explicit ``generator=`` (a ``torch.Generator``) is ignored on both sides: its draws come
from the same shared generator. Python's ``random`` is reseeded too. Dropout is 0 in every
program, so no masks are drawn.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import random
import runpy
import sys
import traceback
from typing import Any, Callable, Dict, List

import numpy as np

SEED = int(os.environ.get("PYTORCH_PARITY_SEED", "1234"))   # another seed: a negative control


def _shape(size: Any) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    return tuple(int(n) for n in size)


def patch_torch(draws: Callable[[], np.random.Generator]) -> None:
    """Make torch's primitive draws read ``draws()`` (the current program's generator)."""
    import torch
    import torch.utils.data

    def np_dtype(dtype: Any) -> Any:
        return torch.empty((), dtype=dtype or torch.get_default_dtype()).numpy().dtype

    def wrap(array: np.ndarray, requires_grad: bool = False, device: Any = None) -> Any:
        out = torch.from_numpy(np.array(array, order="C"))   # 0-d stays 0-d
        if device is not None:
            out = out.to(device)
        return out.requires_grad_(True) if requires_grad else out

    def rand(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None,
             **kw: Any) -> Any:          # torch.rand(size=(8, 8)) too (d2l's chapters)
        size = size if size or "size" not in kw else (kw["size"],)
        return wrap(draws().random(_shape(size)).astype(np_dtype(dtype)), requires_grad, device)

    def randn(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None,
              **kw: Any) -> Any:
        size = size if size or "size" not in kw else (kw["size"],)
        data = draws().standard_normal(_shape(size)).astype(np_dtype(dtype))
        return wrap(data, requires_grad, device)

    def randint(*args: Any, low: Any = None, high: Any = None, size: Any = None,
                dtype: Any = None, device: Any = None, **_: Any) -> Any:
        args = ((low,) if low is not None else ()) + args
        args = args + ((high,) if high is not None else ()) + ((size,) if size is not None else ())
        low, high, shape = (0, *args) if len(args) == 2 else args
        data = draws().integers(low, high, size=_shape((shape,)), dtype=np.int64)
        return wrap(data.astype(np_dtype(dtype or torch.int64)), device=device)

    def randperm(n: int, **_: Any) -> Any:      # tinyattn's: the order of n uniform draws
        return wrap(np.argsort(draws().random(n), kind="stable").astype(np.int64))

    def rand_like(x: Any, dtype: Any = None, **kw: Any) -> Any:
        return rand(*x.shape, dtype=dtype or x.dtype, **kw)

    def randn_like(x: Any, dtype: Any = None, **kw: Any) -> Any:
        return randn(*x.shape, dtype=dtype or x.dtype, **kw)

    def multinomial(probs: Any, num_samples: int, replacement: bool = False, **_: Any) -> Any:
        weights = probs.detach().cpu().numpy()                 # tinyattn's algorithm
        rows = weights if weights.ndim == 2 else weights[None, :]
        r, c = rows.shape
        u = draws().random((r, num_samples if replacement else c))
        if replacement:
            totals = np.cumsum(rows, axis=1)
            cdf = totals / totals[:, -1:]
            out = np.stack([np.searchsorted(cdf[i], u[i], side="right") for i in range(r)])
        else:
            arrival = -np.log1p(-u)
            positive = rows > 0
            arrival = np.where(positive, arrival / np.where(positive, rows, 1), np.inf)
            out = np.argsort(arrival, axis=1, kind="stable")[:, :num_samples]
        out = out.astype(np.int64)
        return wrap(out if weights.ndim == 2 else out[0])

    def uniform_(self: Any, a: float = 0.0, b: float = 1.0, **_: Any) -> Any:
        u = draws().random(tuple(self.shape)).astype(self.detach().numpy().dtype)
        with torch.no_grad():
            return self.copy_(torch.from_numpy(u * (b - a) + a))

    def normal_(self: Any, mean: float = 0.0, std: float = 1.0, **_: Any) -> Any:
        z = draws().standard_normal(tuple(self.shape)).astype(self.detach().numpy().dtype)
        with torch.no_grad():
            return self.copy_(torch.from_numpy(z * std + mean))

    def sampler_iter(self: Any) -> Any:              # tinyattn's draws, lazily, as torch
        n, total = len(self.data_source), self.num_samples
        if self.replacement:
            for _ in range(total // 32):
                yield from draws().integers(0, n, size=32).tolist()
            yield from draws().integers(0, n, size=total % 32).tolist()
            return
        for _ in range(total // n):
            yield from draws().permutation(n).tolist()
        if total % n:
            yield from draws().permutation(n)[:total % n].tolist()

    for name, fn in [("rand", rand), ("randn", randn), ("randint", randint),
                     ("randperm", randperm), ("rand_like", rand_like),
                     ("randn_like", randn_like), ("multinomial", multinomial)]:
        setattr(torch, name, fn)
    torch.Tensor.uniform_ = uniform_
    torch.Tensor.normal_ = normal_
    torch.utils.data.RandomSampler.__iter__ = sampler_iter
    # random_split reads the randperm its module imported (tinyattn's: one permutation).
    torch.utils.data.dataset.randperm = lambda n, **_: wrap(
        draws().permutation(int(n)).astype(np.int64))


def patch_tinyattn(draws: Callable[[], np.random.Generator]) -> None:
    from tinyattn import backend
    from tinyattn.utils import data
    backend.default_generator = lambda device="cpu": draws()
    # A program's own torch.Generator draws from the shared stream too, as the patched torch
    # functions ignore theirs (minGPT's adder splits its data with one).
    uniform, normal, integers = backend.uniform, backend.standard_normal, backend.integers
    backend.uniform = lambda shape, device, dtype, generator=None: uniform(shape, device, dtype)
    backend.standard_normal = lambda shape, device, dtype, generator=None: normal(
        shape, device, dtype)
    backend.integers = lambda low, high, shape, device, generator=None: integers(
        low, high, shape, device)
    data._generator = lambda generator: draws()


def run_programs(framework: str, paths: List[str]) -> Dict[str, Dict[str, Any]]:
    """Run each program with ``framework``; its stdout, stderr and exit status by path."""
    current: List[np.random.Generator] = []
    draws = lambda: current[-1]          # noqa: E731 - the generator of the running program
    if framework == "torch":
        patch_torch(draws)
    else:
        patch_tinyattn(draws)
        from tinyattn.torch_shim import run_script
    results = {}
    for path in paths:
        current.append(np.random.default_rng(SEED))
        random.seed(SEED)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if framework == "torch":
                code = _run_with_torch(path)
            else:
                code = run_script(path, [], banner=False)
        results[path] = {"stdout": out.getvalue(), "stderr": err.getvalue(), "code": code}
    return results


def _run_with_torch(path: str) -> int:
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        runpy.run_path(path, run_name="__main__")
        return 0
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("torch", "tinyattn"):
        sys.exit("usage: python tests/pytorch_parity.py torch|tinyattn PROGRAM.py ...")
    print(json.dumps(run_programs(sys.argv[1], sys.argv[2:])))
