"""A PyTorch mixed-precision program, run by torch and by ``python -m tinyattn run-torch``,
prints the same lines: dtypes inside torch.autocast / torch.amp / torch.cuda.amp /
torch.cpu.amp, bfloat16 tensors, finfo, and GradScaler's scales over skipped steps."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent('''
    import warnings
    warnings.simplefilter("ignore")
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    def name(dtype):
        return str(dtype).replace("torch.", "")

    x = torch.ones(4, 8)
    layer = nn.Linear(8, 3)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        out = layer(x)
        loss = F.cross_entropy(out, torch.tensor([0, 1, 2, 0]))
        print("autocast", name(out.dtype), name(loss.dtype), torch.is_autocast_enabled("cpu"))
    with torch.amp.autocast("cpu", dtype=torch.float16):
        print("amp", name(layer(x).dtype), name(torch.softmax(layer(x), -1).dtype))
    with torch.cpu.amp.autocast():
        print("cpu.amp", name(layer(x).dtype))
    with torch.cuda.amp.autocast():
        print("cuda.amp on cpu tensors", name(layer(x).dtype))

    @torch.autocast("cpu")
    def product(a, b):
        return a @ b
    print("decorated", name(product(x, x.T).dtype), name((x @ x.T).dtype))

    h = torch.tensor([1.0, 2.5, 1 / 3]).bfloat16()
    print("bfloat16", name(h.dtype), [round(v, 6) for v in h.float().tolist()])
    print("finfo", torch.finfo(torch.bfloat16).eps, torch.finfo(torch.float16).max)
    print("half sum", torch.full((4096,), 0.1, dtype=torch.float16).sum().item())

    w = torch.zeros(3, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    for step, bad in enumerate([False, True, False, False, False, True]):
        opt.zero_grad()
        scaler.scale((w * 2).sum()).backward()
        if bad:
            w.grad[0] = float("inf")
        scaler.step(opt)
        scaler.update()
        print("scaler", step, scaler.get_scale(), [round(v, 6) for v in w.tolist()])
    print("state", sorted(scaler.state_dict().items()))
    old = torch.cuda.amp.GradScaler()
    print("cuda scaler enabled", old.is_enabled())
    default = torch.amp.GradScaler()
    print("default scaler", default.is_enabled(), default.get_scale())
''')


def _run(command, tmp_path, program=PROGRAM, name="amp_program.py"):
    script = tmp_path / name
    script.write_text(program)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(command + [str(script)], capture_output=True, text=True,
                         timeout=300, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return [line for line in out.stdout.splitlines() if not line.startswith("[tinyattn")]


def test_the_program_prints_the_same_under_torch_and_run_torch(tmp_path):
    pytest.importorskip("torch", reason="the program's reference output comes from torch")
    theirs = _run([sys.executable], tmp_path)
    ours = _run([sys.executable, "-m", "tinyattn", "run-torch"], tmp_path)
    assert ours == theirs
    assert any(line.startswith("scaler 1 512.0") for line in ours)     # a skipped step


AMP_PROGRAM = textwrap.dedent('''
    import warnings
    import torch

    def report(label, make):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            made = make()
        where = {os.path.basename(w.filename) for w in caught if w.category is FutureWarning}
        print(label, [(w.category.__name__, str(w.message)) for w in caught],
              where <= {"amp_warnings.py"})
        return made

    import os
    report("cuda scaler", lambda: torch.cuda.amp.GradScaler())
    report("cuda scaler off", lambda: torch.cuda.amp.GradScaler(enabled=False))
    report("cpu scaler", lambda: torch.cpu.amp.GradScaler(init_scale=8.0).get_scale())
    report("cuda autocast", lambda: torch.cuda.amp.autocast())
    report("cpu autocast", lambda: torch.cpu.amp.autocast())
    report("amp scaler cpu", lambda: torch.amp.GradScaler("cpu"))
    report("amp scaler default", lambda: torch.amp.GradScaler())
    report("amp autocast", lambda: torch.amp.autocast("cpu"))
    print("scale", torch.cpu.amp.GradScaler(init_scale=8.0).get_scale())
''')


def test_deprecated_amp_spellings_warn_as_torch(tmp_path):
    pytest.importorskip("torch", reason="the program's reference output comes from torch")
    theirs = _run([sys.executable], tmp_path, AMP_PROGRAM, "amp_warnings.py")
    ours = _run([sys.executable, "-m", "tinyattn", "run-torch"], tmp_path, AMP_PROGRAM,
                "amp_warnings.py")
    assert ours == theirs
    assert sum("FutureWarning" in line for line in ours) == 5      # not vacuous
    assert all(line.endswith("True") for line in ours if line.startswith(("cuda", "cpu ")))
