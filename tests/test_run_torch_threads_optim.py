"""``torch.set_num_threads`` / ``get_num_threads`` under ``run-torch``: they set and read
NumPy's BLAS threads through ctypes (or threadpoolctl); where neither finds the BLAS, setting
says on stderr that it has no effect and how to set OMP_NUM_THREADS, and reading reports the
environment. And a
tutorial-style script with the optimizers and schedulers the outside probe missed."""
import os
import subprocess
import sys
import textwrap

import pytest

from tinyattn.torch_shim import shim_names

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_with_threadpoolctl_the_blas_threads_follow():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not [p for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]:
        pytest.skip("NumPy's BLAS is not visible to threadpoolctl")
    with threadpoolctl.threadpool_limits(limits=2):     # restores the limits afterwards
        shim_names.set_num_threads(1)
        assert shim_names.get_num_threads() == 1
        assert all(p["num_threads"] == 1 for p in threadpoolctl.threadpool_info()
                   if p.get("user_api") == "blas")


def test_without_threadpoolctl_ctypes_sets_and_reads_the_blas_threads(monkeypatch):
    from tinyattn import blas_threads
    if blas_threads.find() is None:
        pytest.skip("no OpenBLAS/MKL/BLIS thread control found in this process")
    monkeypatch.setattr(shim_names, "_threadpoolctl", lambda: None)
    before = blas_threads.get_threads()
    try:
        for n in (1, 2, 1):
            shim_names.set_num_threads(n)
            assert shim_names.get_num_threads() == n == blas_threads.get_threads()
    finally:
        blas_threads.set_threads(before)
    assert blas_threads.get_threads() == before          # negative control: it restores


def test_without_any_blas_control_setting_says_it_has_no_effect(monkeypatch, capsys):
    from tinyattn import blas_threads
    monkeypatch.setattr(shim_names, "_threadpoolctl", lambda: None)
    monkeypatch.setattr(blas_threads, "find", lambda: None)
    shim_names.set_num_threads(3)
    err = capsys.readouterr().err
    assert "set_num_threads(3) has no effect" in err and "OMP_NUM_THREADS=3" in err
    assert err.count("\n") == 1                                   # one line
    for name in shim_names._THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert shim_names.get_num_threads() == (os.cpu_count() or 1)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "5")
    assert shim_names.get_num_threads() == 5
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert shim_names.get_num_threads() == 2


@pytest.mark.parametrize("n", [0, -1, 1.5, True, "2"])
def test_a_bad_thread_count_is_refused_as_in_torch(n):
    with pytest.raises(RuntimeError, match="positive integer"):
        shim_names.set_num_threads(n)


def test_a_script_calling_them_runs(tmp_path):
    script = tmp_path / "threads.py"
    script.write_text(textwrap.dedent("""
        import torch
        from torch.optim.lr_scheduler import (ChainedScheduler, ConstantLR, CyclicLR,
                                              ExponentialLR, SequentialLR)
        torch.set_num_threads(1)
        print("threads", torch.get_num_threads())
        w = torch.nn.Parameter(torch.tensor([3.0]))
        for make in (torch.optim.NAdam, torch.optim.RAdam, torch.optim.Adamax):
            opt = make([w], lr=0.1)
            sched = SequentialLR(opt, [ConstantLR(opt, 0.5, 2), ExponentialLR(opt, 0.9)], [3])
            for _ in range(5):
                opt.zero_grad()
                (w * w).sum().backward()
                opt.step()
                sched.step()
        opt = torch.optim.SGD([w], lr=0.1, momentum=0.9, maximize=True)
        sched = ChainedScheduler([CyclicLR(opt, 0.01, 0.1, 2), ExponentialLR(opt, 0.99)])
        sched.step()
        print("done", round(sched.get_last_lr()[0], 6), abs(w.item()) < 3.0)
        """))
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "tinyattn", "run-torch", str(script)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "threads 1" in done.stdout
    assert "done 0.05445 True" in done.stdout, done.stdout
