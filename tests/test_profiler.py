"""tinyattn.profiler: every op's forward and backward by name, self and total time, shapes and
bytes, torch's schedule and table, a valid Chrome trace."""
from __future__ import annotations

import json
import os
import re
import threading

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import autograd, nn
from tinyattn.profiler import (ProfilerAction, ProfilerActivity, profile, record_function,
                               schedule, tensorboard_trace_handler)


def _step(lin, x):
    with record_function("model_step"):
        y = F.softmax(lin(x), dim=-1)
        y = lin(y)
        y.sum().backward()


def _profiled(**options):
    ta.manual_seed(0)
    lin = nn.Linear(8, 8)
    x = ta.randn(4, 8, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU], **options) as prof:
        _step(lin, x)
    return prof


def test_every_forward_and_backward_is_counted_by_name():
    prof = _profiled()
    rows = {e.key: e for e in prof.key_averages()}
    assert rows["aten::linear"].count == 2 and rows["LinearBackward0"].count == 2
    assert rows["aten::softmax"].count == 1 and rows["SoftmaxBackward0"].count == 1
    assert rows["aten::sum"].count == 1 and rows["SumBackward0"].count == 1
    assert rows["model_step"].count == 1
    for e in prof.events():
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
    step = rows["model_step"]
    inside = sum(e.cpu_time_total for e in prof.events() if e.name != "model_step")
    assert step.cpu_time_total >= inside - 1e-3
    assert step.self_cpu_time_total == pytest.approx(step.cpu_time_total - inside, abs=1e-3)
    assert autograd.function._op_observer is None            # off again: one global read per op


def test_shapes_and_bytes():
    prof = _profiled(record_shapes=True, profile_memory=True)
    rows = {(e.key, str(e.input_shapes)): e
            for e in prof.key_averages(group_by_input_shape=True)}
    assert ("aten::linear", "[[4, 8], [8, 8], [8]]") in rows
    softmax = rows[("aten::softmax", "[[4, 8]]")]
    assert softmax.self_cpu_memory_usage == 4 * 8 * 4          # one float32 (4, 8) output
    step = rows[("model_step", "[]")]
    assert step.cpu_memory_usage == sum(e.self_cpu_memory_usage for e in prof.events())
    table = prof.key_averages(group_by_input_shape=True).table(
        sort_by="self_cpu_time_total", row_limit=5)
    assert "Input Shapes" in table and "CPU Mem" in table
    assert len([line for line in table.splitlines() if line.strip().endswith("]")]) == 5


def test_table_columns_are_torchs():
    torch = pytest.importorskip("torch")
    import torch.profiler as tp
    lin = torch.nn.Linear(8, 8)
    with tp.profile(activities=[tp.ProfilerActivity.CPU], profile_memory=True) as theirs:
        lin(torch.ones(2, 8)).sum().backward()
    ours = _profiled(profile_memory=True)

    def header(table):
        lines = table.splitlines()
        return re.split(r"\s{2,}", lines[1].strip()), lines[-1].split(":")[0]
    assert header(ours.key_averages().table(sort_by="self_cpu_time_total")) == \
        header(theirs.key_averages().table(sort_by="self_cpu_time_total"))


def test_sorting_and_row_limit():
    table = _profiled().key_averages().table(sort_by="count", row_limit=2)
    rows = [line for line in table.splitlines()[3:] if line and not line.startswith("-")]
    assert len(rows) == 3 and rows[-1].startswith("Self CPU time total:")
    assert int(rows[0].split()[-1]) == 2
    with pytest.raises(AttributeError, match="sort_by"):
        _profiled().key_averages().table(sort_by="self_cpu_time")
    assert "model_step" in _profiled().key_averages().table(sort_by="cuda_time_total")


def test_stacks_name_the_callers_line(tmp_path):
    prof = _profiled(with_stack=True)
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path), "self_cpu_time_total")
    lines = path.read_text().splitlines()
    assert lines and all(re.fullmatch(r".*test_profiler\.py\(\d+\): _step;.*\S+ \d+", line)
                         for line in lines if "model_step" not in line)


def test_chrome_trace_is_valid_and_nested(tmp_path):
    prof = _profiled(record_shapes=True)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    document = json.loads(path.read_text())
    events = [e for e in document["traceEvents"] if e["ph"] == "X"]
    assert len(events) == len(prof.events())
    for e in events:
        assert {"name", "cat", "ph", "ts", "dur", "pid", "tid"} <= set(e)
        assert e["dur"] >= 0 and e["ts"] >= 0
    step = next(e for e in events if e["name"] == "model_step")
    assert all(step["ts"] <= e["ts"] and e["ts"] + e["dur"] <= step["ts"] + step["dur"] + 1e-3
               for e in events)
    linear = next(e for e in events if e["name"] == "aten::linear")
    assert linear["args"]["Input Dims"] == [[4, 8], [8, 8], [8]]


@pytest.mark.parametrize("options", [dict(wait=1, warmup=1, active=2, repeat=2),
                                     dict(wait=0, warmup=0, active=1),
                                     dict(wait=2, warmup=1, active=3, repeat=1, skip_first=2)])
def test_schedule_matches_torch(options):
    torch = pytest.importorskip("torch")
    import torch.profiler as tp
    ours, theirs = schedule(**options), tp.schedule(**options)
    assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def test_schedule_saves_each_cycle_with_its_steps(tmp_path):
    ta.manual_seed(0)
    lin = nn.Linear(4, 4)
    x = ta.randn(2, 4, requires_grad=True)
    saved = []
    handler = tensorboard_trace_handler(str(tmp_path), worker_name="worker")
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=lambda p: (saved.append(len(p.events())), handler(p))) as prof:
        for _ in range(10):
            lin(x).sum().backward()
            prof.step()
    assert saved == [2 * 5, 2 * 5]      # 2 steps of (linear, sum, 2 backwards, the step)
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 2 and all(re.fullmatch(r"worker\.\d+\.pt\.trace\.json", f)
                                   for f in files)
    steps = [sorted(e["name"] for e in json.loads((tmp_path / f).read_text())["traceEvents"]
                    if e["name"].startswith("ProfilerStep")) for f in files]
    assert steps == [["ProfilerStep#2", "ProfilerStep#3"], ["ProfilerStep#6", "ProfilerStep#7"]]
    assert ProfilerAction.RECORD_AND_SAVE.name == "RECORD_AND_SAVE"


def test_schedule_cycles_match_torchs_trace_ready_calls():
    torch = pytest.importorskip("torch")
    import torch.profiler as tp
    lin_t = torch.nn.Linear(2, 2)
    theirs = []
    with tp.profile(schedule=tp.schedule(wait=1, warmup=1, active=2, repeat=2),
                    on_trace_ready=lambda p: theirs.append(sorted(
                        e.name for e in p.events() if e.name.startswith("ProfilerStep")))
                    ) as prof:
        for _ in range(10):
            lin_t(torch.ones(1, 2)).sum().backward()
            prof.step()
    ours = []
    lin = nn.Linear(2, 2)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=lambda p: ours.append(sorted(
                     e.name for e in p.events() if e.name.startswith("ProfilerStep")))) as prof:
        for _ in range(10):
            lin(ta.ones(1, 2)).sum().backward()
            prof.step()
    assert ours == theirs


def test_other_threads_and_record_function_outside_are_not_recorded():
    lin = nn.Linear(3, 3)
    with record_function("nothing"):        # no profiler: a no-op
        lin(ta.ones(1, 3))
    with profile() as prof:
        worker = threading.Thread(target=lambda: lin(ta.ones(1, 3)))
        worker.start()
        worker.join()
        lin(ta.ones(2, 3))
    assert [e.name for e in prof.events()] == ["aten::linear"]


def test_profiler_sees_through_checkpoint_and_custom_functions():
    from tinyattn.utils.checkpoint import checkpoint

    class Double(ta.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2
    lin = nn.Linear(3, 3)
    x = ta.ones(2, 3, requires_grad=True)
    with profile() as prof:
        y = checkpoint(lambda t: Double.apply(lin(t)), x, use_reentrant=False)
        y.sum().backward()
    names = [e.name for e in prof.events()]
    assert names.count("aten::linear") == 2                 # forward and recomputation
    assert "CheckpointFunctionBackward0" in names and "DoubleBackward" in names
    assert "LinearBackward0" in names
    np.testing.assert_array_equal(x.grad.numpy(), 2 * lin.weight.numpy().sum(axis=0)
                                  .reshape(1, 3).repeat(2, axis=0))


def test_run_torch_answers_torch_profiler_and_checkpoint(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "script.py"
    script.write_text(
        "import torch\n"
        "from torch.utils.checkpoint import checkpoint\n"
        "from torch.profiler import profile, ProfilerActivity, record_function\n"
        "import torch.autograd.profiler as legacy\n"
        "lin = torch.nn.Linear(4, 4)\n"
        "x = torch.randn(2, 4, requires_grad=True)\n"
        "with profile(activities=[ProfilerActivity.CPU]) as prof:\n"
        "    with record_function('step'):\n"
        "        checkpoint(lin, x, use_reentrant=False).sum().backward()\n"
        "print(sorted(e.key for e in prof.key_averages()))\n"
        "with legacy.profile() as old:\n"
        "    lin(x)\n"
        "print([e.key for e in old.key_averages()])\n")
    done = subprocess.run([sys.executable, "-m", "tinyattn", "run-torch", str(script)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "['CheckpointFunctionBackward0', 'LinearBackward0', 'SumBackward0', 'aten::linear', " \
           "'aten::sum', 'step']" in done.stdout
    assert "['aten::linear']" in done.stdout


def test_example_runs_quick(tmp_path, capsys):
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "profile_step.py"
    spec = importlib.util.spec_from_file_location("profile_step_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(["--quick", "--out", str(tmp_path)])
    assert "LinearBackward0" in result["table"] and "aten::linear" in result["table"]
    events = json.loads(pathlib.Path(result["trace"]).read_text())["traceEvents"]
    assert {"forward", "backward", "optimizer", "ProfilerStep#2"} <= {e["name"] for e in events}
