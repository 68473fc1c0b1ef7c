"""Tensors sent to other processes are shared, as in torch: with real processes (fork and
spawn, Queue / Process arguments / spawn arguments), the receiver's in-place writes are seen
by the sender and the sender's by the receiver, the sender's tensor becomes ``is_shared()``,
views arrive as the same view, every dtype and 0-d tensors travel (empty ones are copied, as
torch does), a Parameter stays a Parameter, a non-leaf that requires grad is refused with
torch's message, and pickle still copies. The same script runs with torch where it is
installed and must observe the same. Then: nothing is left in /dev/shm however a process
ends, with a negative control showing that the count sees a leak.

The scripts: tests/multiprocessing_sharing_script.py, tests/multiprocessing_leak_script.py.
"""
import functools
import json
import os
import subprocess
import sys

import pytest

import tinyattn as ta
from tinyattn.tensor import shared_memory

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="shared memory between processes: Linux only")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARING = os.path.join(HERE, "multiprocessing_sharing_script.py")
LEAKS = os.path.join(HERE, "multiprocessing_leak_script.py")
NON_EMPTY = ["view", "int64", "bool", "float16", "bfloat16", "zero_d", "param", "matrix_t"]


@functools.lru_cache(maxsize=None)           # the torch comparison reuses tinyattn's runs
def _run(script, *args, new_session=False):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, script, *args], capture_output=True, text=True,
                          timeout=300, env=env, cwd=ROOT, start_new_session=new_session)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _torch_available():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


SENT = [("spawn", "queue"), ("fork", "queue"), ("spawn", "args"), ("spawn", "spawn")]


@pytest.mark.parametrize("context,how", SENT)
def test_a_sent_tensor_is_one_memory_in_both_processes(context, how):
    seen = _run(SHARING, "tinyattn", context, how)
    received = seen["received"]
    for name in NON_EMPTY:
        assert received[name]["shared"], name
        assert seen["sender_is_shared"][name], name            # moved in the sender
        assert seen["sender_after_child_wrote"][name][0] == (1.0 if name == "bool" else 99.0)
        if name != "bool":
            assert seen["child_after_sender_wrote"][name][0] == -5.0, name
    assert seen["sender_is_shared"]["base"]                    # the view's whole memory
    assert received["view"]["stride"] == [3] and received["view"]["values"] == [2, 5, 8]
    assert received["matrix_t"]["stride"] == [1, 3]            # a transposed view
    assert seen["base_after"][2] == -5.0                       # view[0] is base[2]
    assert received["param"]["type"] == "Parameter" and received["param"]["requires_grad"]
    assert received["bfloat16"]["dtype"] == "bfloat16"
    assert received["zero_d"]["shape"] == []
    assert not received["empty"]["shared"] and not seen["sender_is_shared"]["empty"]


def test_a_fork_child_inherits_a_copy_of_what_was_never_shared():
    """The negative control, and torch's behaviour: a fork child's arguments are not sent
    (not pickled) but inherited copy-on-write, so nothing is shared."""
    seen = _run(SHARING, "tinyattn", "fork", "args")
    assert not any(d["shared"] for d in seen["received"].values())
    assert seen["sender_after_child_wrote"]["view"] == [2.0, 5.0, 8.0]
    assert seen["child_after_sender_wrote"]["view"][0] == 99.0


def test_pool_and_pipe_share_with_every_start_method():
    seen = _run(SHARING, "tinyattn", "pool_pipe")
    for method in ("fork", "spawn", "forkserver"):
        assert seen[method] == {"pool": [2.0, 2.0, 2.0], "pool_shared": True,
                                "sender_shared": True, "pipe": [3.0, 3.0]}, method


@pytest.mark.skipif(not _torch_available(), reason="torch is the oracle for these runs")
@pytest.mark.parametrize("context,how", SENT[:3] + [("fork", "args"), ("checks", ""),
                                                    ("pool_pipe", "")])
def test_torch_observes_the_same(context, how):
    """spawn(args=...) is left out: torch's sends its arguments as spawn-args does."""
    args = (context, how) if how else (context,)
    assert _run(SHARING, "tinyattn", *args) == _run(SHARING, "torch", *args)


def test_non_leaf_refusal_and_pickle_copies():
    seen = _run(SHARING, "tinyattn", "checks")
    assert seen["non_leaf"].startswith("Cowardly refusing to serialize non-leaf tensor "
                                       "which requires_grad")
    assert seen["pickle"] == {"shared": False, "original": [0.0, 0.0, 0.0]}


def test_moving_a_base_keeps_its_views_and_aliases_on_one_memory():
    """In one process: share_memory_() through a view moves the base, its other views and
    its detach()-ed aliases together (the values once), keeping offsets and strides."""
    base = ta.arange(12.0).reshape(3, 4)
    row, column, alias = base[1], base[:, 2], base.detach()
    flipped = ta.flip(base, [0]) if hasattr(ta, "flip") else None
    column.share_memory_()
    assert all(t.is_shared() for t in (base, row, column, alias))
    assert column.stride() == (4,) and row.tolist() == [4.0, 5.0, 6.0, 7.0]
    alias[1, 2] = -1.0
    assert row[2].item() == -1.0 and column[1].item() == -1.0 and base[1, 2].item() == -1.0
    assert flipped is None or not flipped.is_shared()           # a copy, not a view
    assert not ta.zeros(0).share_memory_().is_shared()           # empty: as torch


EXITS = ["normal", "exception", "os_exit", "sigkill", "loader", "sigint"]  # sigint: last


@pytest.mark.parametrize("context", ["fork", "spawn"])
@pytest.mark.parametrize("mode", ["memfd", "fallback"])
def test_nothing_is_left_however_the_processes_end(context, mode):
    """memfd (the default) and the /dev/shm fallback, each way a child can end (one parent
    runs them in turn): no file in /dev/shm, and the parent holds no descriptor or mapping
    of shared memory once the tensors are gone."""
    tag = f"{context}-{mode}-{os.getpid()}"
    seen = _run(LEAKS, context, ",".join(EXITS), mode, tag, new_session=True)
    assert _our_files(tag) == set()
    assert list(seen) == EXITS
    for how, saw in seen.items():
        assert saw["held_at_end"] == [0, 0], how
        if how == "loader":
            assert saw["batch_shared"]
            continue
        assert saw["child_wrote"] == 42.0 and saw["back"] == 7.0, how
        assert saw["held_while_alive"][1] > 0, how           # the check sees mappings
    assert seen["sigint"]["interrupted"] and seen["sigkill"]["exitcode"] == -9
    assert seen["os_exit"]["exitcode"] == 3 and seen["exception"]["exitcode"] == 1


def test_negative_control_the_count_sees_a_leak():
    """With the fallback's name kept (cleanup disabled), the same runs leave files: the
    check above would fail."""
    tag = f"control-{os.getpid()}"
    try:
        _run(LEAKS, "fork", "sigkill,loader", "fallback-kept", tag, new_session=True)
        assert len(_our_files(tag)) >= 3        # the parent's, the child's, the batches
    finally:
        for name in _our_files(tag):
            os.unlink(os.path.join("/dev/shm", name))


def test_the_descriptor_is_closed_when_the_last_array_goes():
    import gc
    held = shared_memory.open_descriptors()
    t = ta.ones(1000).share_memory_()
    view = t[10:20]
    del t
    gc.collect()
    assert shared_memory.open_descriptors() == held + 1          # the view keeps it
    del view
    gc.collect()
    assert shared_memory.open_descriptors() == held


def _our_files(tag):
    """This run's files in /dev/shm (the tag keeps other processes' files out)."""
    if not os.path.isdir("/dev/shm"):
        return set()
    return {name for name in os.listdir("/dev/shm")
            if name.startswith(f"tinyattn-shared-{tag}")}


def test_a_descriptor_reopened_by_proc_path_is_checked_to_be_the_same_memory():
    """spawn's MPI job reopens the parent's descriptors through /proc/<pid>/fd/<n>; should
    that number name another file by then, it raises instead of mapping the wrong memory."""
    import pickle
    from multiprocessing.reduction import ForkingPickler
    from tinyattn.multiprocessing import reductions
    t = ta.ones(3)
    with reductions.sharing_by_proc_path():
        payload = ForkingPickler.dumps(t)
    received = pickle.loads(payload)
    received[0] = 5.0
    assert t.tolist() == [5.0, 1.0, 1.0]
    with open(os.devnull, "rb") as other:
        handle = reductions.ProcPathFd(other.fileno())
        handle.key = (t.is_shared(), -1)                     # as if the number were reused
        with pytest.raises(RuntimeError, match="must hold the tensor until it is received"):
            handle.detach()


def test_without_shared_memory_a_sent_tensor_is_copied(monkeypatch):
    """Off Linux (no memfd, no /dev/shm) sending still works, by value; sharing is asked
    for explicitly with share_memory_(), which says why it cannot."""
    import pickle
    from multiprocessing.reduction import ForkingPickler
    monkeypatch.setattr(shared_memory, "available", lambda: False)
    monkeypatch.setattr(shared_memory, "use_memfd", False)
    t = ta.ones(2)
    received = pickle.loads(ForkingPickler.dumps(t))
    received[0] = 3.0
    assert t.tolist() == [1.0, 1.0] and not t.is_shared()
    with pytest.raises(RuntimeError, match="shared memory needs Linux"):
        t.share_memory_()


def test_a_gpu_tensor_sent_to_another_process_is_refused_not_copied():
    """torch shares a CUDA tensor through CUDA IPC (the receiver's writes reach the sender);
    tinyattn has no IPC, so sending one raises and says what to send instead, rather than a
    copy that would differ silently. The GPU is the strict device stand-in (a GPU array type
    that is not NumPy's); a CPU tensor of the same values is sent (negative control)."""
    from multiprocessing.reduction import ForkingPickler
    from tinyattn import strict_device
    strict_device.enable()
    on_gpu = ta.ones(3).to(strict_device.DEVICE)
    with pytest.raises(RuntimeError, match=r"CUDA IPC.*t\.cpu\(\)"):
        ForkingPickler.dumps(on_gpu)
    assert ForkingPickler.dumps(ta.ones(3))
