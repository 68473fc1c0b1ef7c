"""examples/mixed_precision.py --quick runs and shows what the docs say: float16 flushes
small gradients to zero layer by layer, loss scaling brings them back."""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "examples" / "mixed_precision.py"


def test_mixed_precision_example_quick():
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                         text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "linear output bfloat16, mse_loss float32" in text
    assert "weight gradient float32" in text
    rows = re.findall(r"^\s+(\d)\s+([\d.]+)%\s+([\d.]+)%\s+([\d.]+)%$", text, re.M)
    assert len(rows) == 5
    exact, plain, scaled = ([float(r[i]) for r in rows] for i in (1, 2, 3))
    assert exact == [0.0] * 5 and scaled == [0.0] * 5
    assert plain[0] > 90 and plain[0] > plain[-1] > 0        # worst far from the loss
    assert "float16 + GradScaler" in text
