"""Programs written the way learners' codebases write PyTorch (minGPT's adder and trainer,
the Annotated Transformer's label smoothing and schedule), in tinyattn's own words: each runs
unchanged through run-torch and prints torch's numbers from the same random draws
(tests/pytorch_parity.py), float32 tolerance (test_pytorch_programs.py says why).

Each program uses names a learner's codebase calls: its own
torch.Generator, torch.utils.data.dataloader, nn.KLDivLoss, index_fill_, torch.save to a
buffer. The negative control runs one program from other draws.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from test_pytorch_programs import FLOAT32, compare_outputs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDER = os.path.join(ROOT, "tests", "learner_programs")
DRIVER = os.path.join(ROOT, "tests", "pytorch_parity.py")
PROGRAMS = sorted(f for f in os.listdir(FOLDER) if f.endswith(".py"))


def _drive(framework: str, programs, seed: str = "1234"):
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTORCH_PARITY_SEED=seed)
    return subprocess.Popen([sys.executable, DRIVER, framework,
                             *[os.path.join(FOLDER, p) for p in programs]], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _collect(process):
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, f"the driver failed:\n{err[-3000:]}"
    return {os.path.basename(k): v for k, v in json.loads(out).items()}


@pytest.fixture(scope="module")
def outputs():
    pytest.importorskip("torch", reason="the programs are compared with real torch")
    on_torch, on_tinyattn = _drive("torch", PROGRAMS), _drive("tinyattn", PROGRAMS)
    return _collect(on_torch), _collect(on_tinyattn)


@pytest.mark.parametrize("program", PROGRAMS)
def test_learner_program_matches_torch(program, outputs):
    on_torch, on_tinyattn = outputs[0][program], outputs[1][program]
    assert on_torch["code"] == 0, on_torch["stderr"][-3000:]
    assert on_tinyattn["code"] == 0, on_tinyattn["stderr"][-3000:]
    assert on_torch["stdout"].strip()
    problems = compare_outputs(on_torch["stdout"], on_tinyattn["stdout"], *FLOAT32)
    assert not problems, "\n".join(problems[:5])


def test_negative_control_other_draws_do_not_match(outputs):
    program = "label_smoothing_pattern.py"
    other = _collect(_drive("tinyattn", [program], seed="4321"))
    assert other[program]["code"] == 0
    assert compare_outputs(outputs[0][program]["stdout"], other[program]["stdout"], *FLOAT32)
