"""Run-torch: `w.data.mul_(2)` between a forward and its backward. torch lets it
through silently, and so does tinyattn; under `torch.autograd.set_detect_anomaly(True)`
tinyattn keeps .data read-only while a pending backward needs it (an opt-in stricter mode),
and the message must say that, not blame an expand()."""
import os
import subprocess
import sys

import tinyattn as ta

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ta.__file__)))
SCRIPT = """
import torch
lin = torch.nn.Linear(3, 2)
out = lin(torch.ones(4, 3, requires_grad=True)).sum()
lin.weight.data.mul_(2)          # as torch: the write lands, nothing is counted
print("landed:", lin.weight._version)
out = lin(torch.ones(4, 3, requires_grad=True)).sum()
with torch.autograd.set_detect_anomaly(True):
    try:
        lin.weight.data.mul_(2)
    except RuntimeError as exc:
        print("refused:", exc)
out.backward()
lin.weight.data.mul_(2)          # after the backward: allowed, as an optimizer step
print("after backward: ok")
"""


def test_data_changed_before_backward_gets_a_message_about_the_backward(tmp_path):
    script = tmp_path / "data_mul.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-m", "tinyattn", "run-torch", str(script)],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    refused = next(line for line in result.stdout.splitlines() if line.startswith("refused"))
    assert "backward" in refused and "expand" not in refused
    assert "landed: 0" in result.stdout
    assert "after backward: ok" in result.stdout
