"""``python -m tinyattn doctor --device cuda``: one command that checks a GPU setup.

It reports the versions and the device, then (when the device is there):
1. runs every op of the op table forward and backward on the device and on the CPU and
   compares them (float64 to 1e-10, float32 to 1e-4);
2. runs a float64 gradcheck on the device;
3. runs one GPT training step (forward, backward, AdamW) on both and compares loss and grads;
4. times MHA forward+backward on the device, and PyTorch's on CUDA when torch sees a GPU;
5. runs the test suite under pytest, with the op-table tests on the device.
On a machine without the device it says why, what to install, and exits 0. ``--device
strict`` runs the same checks on the CPU-side CuPy stand-in (tinyattn.strict_device).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Callable, List, Optional, Tuple

import numpy as np

from . import backend
from .gradcheck import gradcheck
from .optable import OP_TABLE, make_inputs
from .serialization import atomic_write
from .tensor import as_tensor, tensor

__all__ = ["main"]

TOLERANCE = {np.float64: 1e-10, np.float32: 1e-4}


def _line(report: List[str], text: str = "") -> None:
    print(text, flush=True)
    report.append(text)


def _compare_ops(device: str, report: List[str]) -> int:
    failures = 0
    rng = np.random.default_rng(0)
    for dtype, tol in TOLERANCE.items():
        worst, worst_name, count = 0.0, "", 0
        for spec in OP_TABLE:
            for case in spec.cases(rng):
                try:
                    results = [_run_case(spec, case, dtype, where) for where in ("cpu", device)]
                except Exception as exc:  # report every broken op, not just the first
                    failures += 1
                    _line(report, f"    FAIL {spec.name} [{case.label}] {dtype.__name__}: "
                                  f"{type(exc).__name__}: {exc}")
                    continue
                for a, b in zip(*results):
                    err = float(np.max(np.abs(a - b) / (1 + np.abs(a)))) if a.size else 0.0
                    if err > worst:
                        worst, worst_name = err, spec.name
                    if not err <= tol:
                        failures += 1
                        _line(report, f"    FAIL {spec.name} [{case.label}] {dtype.__name__}: "
                                      f"error {err:.2e} > {tol:g}")
                count += 1
        status = "ok" if worst <= tol else "FAIL"
        _line(report, f"  {dtype.__name__}: {count} op cases, forward+backward, device vs cpu, "
                      f"worst error {worst:.2e} ({worst_name}), tolerance {tol:g}: {status}")
    return failures


def _run_case(spec, case, dtype, where: str) -> List[np.ndarray]:
    """Forward and backward of one op-table case on ``where``: output and input grads."""
    inputs = make_inputs(case, dtype=dtype, device=where)
    out = spec.fn(*inputs)
    upstream = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(as_tensor(upstream.astype(dtype), device=where))
    return [out.numpy()] + [backend.to_host(t.grad._data) for t in inputs if t.requires_grad]


def _gradcheck_on_device(device: str, report: List[str]) -> int:
    x = tensor(np.random.default_rng(0).standard_normal((3, 5)), requires_grad=True,
               device=device)
    ok = gradcheck(lambda t: (t.softmax(-1) * t).tanh(), [x], raise_exception=False)
    _line(report, f"  float64 gradcheck on {device}: {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


def _gpt_step(device: str, dtype: str) -> Tuple[float, List[np.ndarray]]:
    from . import nn, optim  # noqa: PLC0415 - the doctor sits above nn and optim
    from .backend import manual_seed  # noqa: PLC0415

    manual_seed(0)
    config = nn.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, d_model=16,
                          dropout=0.0)
    model = nn.GPT(config).to(device, dtype)
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    ids = np.random.default_rng(0).integers(0, 11, size=(3, 8))
    idx = as_tensor(ids, device=device)
    targets = as_tensor(np.roll(ids, -1, axis=1), device=device)
    _, loss = model(idx, targets)
    loss.backward()
    grads = [backend.to_host(p.grad._data) for p in model.parameters()]
    opt.step()
    return loss.item(), grads + [p.numpy() for p in model.parameters()]


def _compare_gpt(device: str, report: List[str]) -> int:
    try:
        failures = 0
        for dtype, tol in (("float64", 1e-10), ("float32", 1e-4)):
            loss_cpu, arrays_cpu = _gpt_step("cpu", dtype)
            loss_dev, arrays_dev = _gpt_step(device, dtype)
            err = max(float(np.max(np.abs(a - b) / (1 + np.abs(a))))
                      for a, b in zip(arrays_cpu, arrays_dev))
            err = max(err, abs(loss_cpu - loss_dev))
            ok = err <= tol
            failures += not ok
            _line(report, f"  GPT training step (2 layers, AdamW) {dtype}: loss cpu "
                          f"{loss_cpu:.6f} vs {device} {loss_dev:.6f}, worst grad/param error "
                          f"{err:.2e}: {'ok' if ok else 'FAIL'}")
        return failures
    except ImportError as exc:
        _line(report, f"  GPT training step: skipped ({exc})")
        return 0


def _median_time(fn: Callable[[], None], sync: Callable[[], None], reps: int = 10) -> float:
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _benchmark_mha(device: str, report: List[str]) -> None:
    from . import nn  # noqa: PLC0415

    b, s, d, h = 8, 256, 512, 8
    def sync() -> None:
        backend.synchronize(device)
    mha = nn.MultiHeadAttention(d, h).to(device)
    x = tensor(np.random.default_rng(0).standard_normal((b, s, d)).astype(np.float32),
               requires_grad=True, device=device)

    def ours() -> None:
        mha(x, need_weights=False)[0].sum().backward()

    ours_t = _median_time(ours, sync)
    line = f"  MHA forward+backward B={b} S={s} d_model={d} heads={h} float32: tinyattn " \
           f"{ours_t * 1e3:.2f} ms"
    try:
        import torch  # noqa: PLC0415 - an optional oracle, never needed by the library
        if device == "cuda" and torch.cuda.is_available():
            tm = torch.nn.MultiheadAttention(d, h, batch_first=True).cuda()
            tx = torch.randn(b, s, d, device="cuda", requires_grad=True)

            def theirs() -> None:
                tm(tx, tx, tx, need_weights=False)[0].sum().backward()

            torch_t = _median_time(theirs, torch.cuda.synchronize)
            line += f", torch {torch_t * 1e3:.2f} ms, ratio {ours_t / torch_t:.2f}"
        else:
            line += " (torch CUDA not available for comparison)"
    except ImportError:
        line += " (torch not installed for comparison)"
    _line(report, line)


def _run_tests(device: str, report: List[str]) -> int:
    """The whole test suite, with TINYATTN_TEST_DEVICE set: the op-table tests (forward
    references, float32 dtype checks, full-Jacobian gradchecks) then run on ``device``."""
    tests = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
    if not os.path.isdir(tests):
        _line(report, "  test suite: not found next to the package (installed copy); skipped")
        return 0
    env = dict(os.environ, TINYATTN_TEST_DEVICE=device)
    command = [sys.executable, "-m", "pytest", "-q", tests, "-p", "no:cacheprovider"]
    if importlib.util.find_spec("xdist") is None:
        # setup.cfg's addopts ask for pytest-xdist's "-n auto"; without the plugin pytest
        # would stop at that option, so run the suite in one process instead
        command += ["-o", "addopts=-q"]
        _line(report, "  pytest-xdist is not installed: the suite runs in one process "
                      "(pip install pytest-xdist to use every core)")
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True)
    except OSError as exc:
        _line(report, f"  pytest tests/: could not start {sys.executable}: {exc}")
        return 1
    _line(report, f"  pytest tests/ (op table on {device}): "
                  f"{_last_line(result.stdout) or _last_line(result.stderr) or '(no output)'}")
    if result.returncode != 0:
        _line(report, f"  pytest exited with status {result.returncode}; why, in its own words:")
        for text in _why(result.stdout, result.stderr):
            _line(report, f"    {text}")
    return 0 if result.returncode == 0 else 1


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _why(stdout: str, stderr: str, count: int = 12) -> List[str]:
    """The lines that say why a sub-step failed: pytest's error lines and failure summary
    (``ERROR``, ``FAILED``, ``E   ``, ``No module named``, usage errors), else the last lines
    of its error output, else of its output; never nothing."""
    lines = (stderr + "\n" + stdout).splitlines()
    telling = [line for line in lines if line.startswith(("ERROR", "FAILED", "E ", "error:"))
               or "No module named" in line or "unrecognized arguments" in line]
    chosen = telling or [line for line in stderr.splitlines() if line.strip()] \
        or [line for line in stdout.splitlines() if line.strip()]
    return chosen[-count:] or ["(it printed nothing; run the command above by hand)"]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinyattn doctor",
                                     description="check that tinyattn runs on a GPU")
    parser.add_argument("--device", default="cuda", choices=["cuda", "strict"])
    parser.add_argument("--out", help="also write the report (markdown) to this file")
    parser.add_argument("--skip-tests", action="store_true", help="skip the pytest run")
    args = parser.parse_args(argv)
    report: List[str] = []
    _line(report, f"tinyattn doctor, {time.strftime('%Y-%m-%d %H:%M')}")
    _line(report, f"  python {platform.python_version()}, numpy {np.__version__}, "
                  f"machine {platform.machine()} {platform.processor() or ''}".rstrip())
    if args.device == "strict":
        from . import strict_device  # noqa: PLC0415
        strict_device.enable()
    elif not backend.cuda_is_available():
        _line(report, f"  no CUDA device: {backend.cuda_unavailable_reason()}")
        _line(report, f"  to use a GPU, {backend.CUDA_INSTALL_HINT}")
        _line(report, "  nothing to check on this machine (exit 0)")
        return 0
    else:
        _line(report, f"  {backend.device_info('cuda')}")
    failures = _compare_ops(args.device, report)
    failures += _gradcheck_on_device(args.device, report)
    failures += _compare_gpt(args.device, report)
    try:
        _benchmark_mha(args.device, report)
    except ImportError as exc:
        _line(report, f"  MHA benchmark: skipped ({exc})")
    if not args.skip_tests:
        failures += _run_tests(args.device, report)
    _line(report, f"doctor: {'all checks passed' if not failures else f'{failures} FAILED'}")
    if args.out:
        with atomic_write(args.out, "w") as f:
            f.write("```\n" + "\n".join(report) + "\n```\n")
    return 1 if failures else 0
