"""tinyattn.multiprocessing (torch.multiprocessing): spawn's results and failures with
torch's exception types and messages, tensors shared with share_memory_() or by being sent
(an in-place change in a child is seen by the parent; a fork child's inherited tensor that
was never shared is a copy: the negative control), Module.share_memory, and pickling by
value shares nothing. tests/test_multiprocessing_sharing.py holds the rest of the sharing."""
import os
import pickle
import signal

import pytest

import tinyattn as ta
import tinyattn.multiprocessing as mp


def _add_rank(rank, shared, copied, model):
    shared[rank] += rank + 1
    copied[rank] += 100
    with ta.no_grad():
        model.weight.add_(1.0)


def _fails(rank, how):
    if rank == 1 and how == "raise":
        raise ValueError("rank 1 fails")
    if rank == 1 and how == "exit":
        os._exit(7)
    if rank == 1 and how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_shared_tensors_are_shared_and_sent_ones_too(start_method):
    """As torch: with "spawn" the arguments are sent (pickled), which moves every tensor
    into shared memory; with "fork" they are inherited, so a tensor not shared before is
    the child's copy (copy-on-write)."""
    shared = ta.zeros(3).share_memory_()
    copied = ta.zeros(3)
    model = ta.nn.Linear(2, 1).share_memory()
    before = model.weight.tolist()[0]
    assert shared.is_shared() and model.weight.is_shared() and not copied.is_shared()
    assert mp.spawn(_add_rank, args=(shared, copied, model), nprocs=2,
                    start_method=start_method) is None
    assert shared.tolist() == [1.0, 2.0, 0.0]
    if start_method == "fork":
        assert copied.tolist() == [0.0, 0.0, 0.0] and not copied.is_shared()   # a copy
    else:
        assert copied.tolist() == [100.0, 100.0, 0.0] and copied.is_shared()   # sent
    assert model.weight.tolist()[0] == pytest.approx([w + 2 for w in before])


def test_spawn_failures_are_raised_as_torchs():
    with pytest.raises(mp.ProcessRaisedException, match=r"-- Process 1 terminated with the "
                                                        r"following error:\nTraceback"):
        mp.spawn(_fails, args=("raise",), nprocs=2, start_method="fork")
    with pytest.raises(mp.ProcessExitedException, match="process 1 terminated with exit "
                                                        "code 7") as caught:
        mp.spawn(_fails, args=("exit",), nprocs=2, start_method="fork")
    assert caught.value.exit_code == 7 and caught.value.error_index == 1
    with pytest.raises(mp.ProcessExitedException, match="terminated with signal SIGKILL"):
        mp.spawn(_fails, args=("kill",), nprocs=2, start_method="fork")
    context = mp.spawn(_fails, args=("none",), nprocs=2, join=False, start_method="fork")
    assert len(context.pids()) == 2
    while not context.join(timeout=30):
        pass


def test_python_multiprocessing_names_and_sharing_strategy():
    assert mp.Process is __import__("multiprocessing").Process
    assert mp.get_sharing_strategy() == "file_descriptor"           # torch's on Linux
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    try:
        mp.set_sharing_strategy("file_system")
        assert mp.get_sharing_strategy() == "file_system"
    finally:
        mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="file_descriptor"):
        mp.set_sharing_strategy("shared_files")


def test_pickling_copies_and_share_memory_of_a_view_moves_its_base():
    t = ta.arange(4).float().share_memory_()
    copy = pickle.loads(pickle.dumps(t))
    assert copy.tolist() == t.tolist() and not copy.is_shared()
    copy.add_(1)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]                 # pickle's is a copy
    base = ta.zeros(4)
    view, alias = base[1:], base.detach()
    assert view.share_memory_() is view                       # as torch: the whole memory
    assert base.is_shared() and view.is_shared() and alias.is_shared()
    view[0] = 5.0
    alias[3] = 7.0
    assert base.tolist() == [0.0, 5.0, 0.0, 7.0]              # still one memory


def test_spawn_started_children_under_run_torch_run_on_tinyattn(tmp_path):
    """A process started by the "spawn" method re-imports the script, whose `import torch`
    must be tinyattn's there too: before, it imported real PyTorch where that was installed
    (silently computing with torch) and failed where it was not."""
    import subprocess
    import sys as _sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = tmp_path / "spawned.py"
    script.write_text(
        "import torch, torch.multiprocessing as mp\n"
        "def f(q):\n"
        "    q.put(type(torch.ones(1)).__module__)\n"
        "if __name__ == '__main__':\n"
        "    ctx = mp.get_context('spawn')\n"
        "    q = ctx.Queue()\n"
        "    p = ctx.Process(target=f, args=(q,))\n"
        "    p.start()\n"
        "    print('child', q.get(timeout=120))\n"
        "    p.join()\n")
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([_sys.executable, "-m", "tinyattn", "run-torch", str(script)],
                          capture_output=True, text=True, timeout=300, env=env,
                          cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "child tinyattn." in done.stdout, done.stdout        # not real torch's Tensor
