"""DataLoader(num_workers > 0): real worker processes with torch's semantics. The same
batches in the same order as num_workers=0; IterableDataset sharding by get_worker_info in
torch's interleaved order (torch's loader as oracle); per-worker seeds; worker_init_fn;
persistent_workers; exceptions re-raised with the worker's traceback; timeout; a dead
worker; no stray processes after an early break, an error or Ctrl-C; large batches through
shared memory with nothing left in /dev/shm; option errors and the pin_memory warning with
torch's words; and 2 workers feeding a loop faster than 0 when each sample takes time."""
import gc
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.utils.data import (DataLoader, Dataset, IterableDataset, TensorDataset,
                                 default_collate, get_worker_info)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:                                    # a zombie (exited, not yet reaped) is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


class Pids(Dataset):
    """Sample i: (i, the pid of the process that built it, a random draw there)."""

    def __init__(self, n=12):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i, os.getpid(), float(ta.rand(1).item()), random.random(), np.random.rand()


class Stream(IterableDataset):
    """0..n-1, each worker reading its share (torch's documented sharding pattern)."""

    def __init__(self, n=10):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


def test_same_batches_in_the_same_order_as_without_workers():
    ds = TensorDataset(ta.arange(60).float().reshape(30, 2), ta.arange(30))
    orders = []
    for workers in (0, 1, 3):
        ta.manual_seed(5)
        loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=workers)
        orders.append([[b.tolist() for b in batch] for pass_ in range(2) for batch in loader])
    assert orders[0] == orders[1] == orders[2]
    assert orders[0][0][1] != [0, 1, 2, 3]                      # it did shuffle
    batches = list(DataLoader(ds, batch_size=4, num_workers=2))
    assert isinstance(batches[0][0], ta.Tensor) and batches[0][0].dtype == np.float32
    assert len(batches) == 8 and batches[-1][1].tolist() == [28, 29]


def test_batches_really_come_from_worker_processes_with_their_seeds():
    loader = DataLoader(Pids(), batch_size=None, num_workers=2)
    samples = list(loader)
    assert [s[0] for s in samples] == list(range(12))
    pids = {s[1] for s in samples}
    assert os.getpid() not in pids and len(pids) == 2
    by_worker = {pid: [s for s in samples if s[1] == pid] for pid in pids}
    first = [v[0] for v in by_worker.values()]
    assert first[0][2:] != first[1][2:]          # each worker its own random streams
    ta.manual_seed(1)
    again = [s[2:] for s in DataLoader(Pids(), batch_size=None, num_workers=2)]
    ta.manual_seed(1)
    repeat = [s[2:] for s in DataLoader(Pids(), batch_size=None, num_workers=2)]
    assert again == repeat                       # repeat per seed
    ta.manual_seed(1)
    loader = DataLoader(Pids(), batch_size=None, num_workers=2)
    assert [s[2:] for s in loader] == again
    assert [s[2:] for s in loader] != again      # the next pass: other random numbers
    ta.manual_seed(2)
    assert [s[2:] for s in DataLoader(Pids(), batch_size=None, num_workers=2)] != again


class BlasThreads(Dataset):
    """Sample i: the largest BLAS thread count threadpoolctl sees in this process."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        import threadpoolctl
        return max([pool["num_threads"] for pool in threadpoolctl.threadpool_info()
                    if pool["user_api"] == "blas"] or [0])


def test_workers_run_numpys_blas_on_one_thread_as_torch_runs_one_intra_op_thread():
    """torch's worker loop calls torch.set_num_threads(1); a worker with a full-width BLAS
    would fight the training loop for the cores."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not any(p["user_api"] == "blas" for p in threadpoolctl.threadpool_info()):
        pytest.skip("threadpoolctl finds no BLAS in this NumPy")
    with threadpoolctl.threadpool_limits(limits=2):   # the control: more than 1 here
        assert BlasThreads()[0] == 2 or os.cpu_count() < 2
        threads = [int(t) for t in DataLoader(BlasThreads(), batch_size=None, num_workers=2)]
    assert threads == [1, 1, 1, 1]


def test_worker_info_and_worker_init_fn():
    assert get_worker_info() is None

    class Info(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            info = get_worker_info()
            return (info.id, info.num_workers, info.seed - info.id, info.dataset is not self,
                    os.environ.get("TINYATTN_TEST_INIT"))

    def init(worker_id):
        os.environ["TINYATTN_TEST_INIT"] = f"init {worker_id}"

    out = list(DataLoader(Info(), batch_size=None, num_workers=2, worker_init_fn=init))
    assert [o[0] for o in out] == [0, 1, 0, 1] and {o[1] for o in out} == {2}
    assert len({o[2] for o in out}) == 1               # seed = base_seed + worker id
    assert [o[4] for o in out] == ["init 0", "init 1", "init 0", "init 1"]


def test_iterable_dataset_sharding_matches_torch():
    torch = pytest.importorskip("torch", reason="torch's loader is the oracle for the order")

    class TorchStream(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            return iter(range(info.id, 10, info.num_workers))

    results = []
    for kwargs in (dict(batch_size=3), dict(batch_size=3, drop_last=True),
                   dict(batch_size=None)):
        ours = [b.tolist() if isinstance(b, ta.Tensor) else b
                for b in DataLoader(Stream(), num_workers=2, **kwargs)]
        theirs = [b.tolist() if isinstance(b, torch.Tensor) else b
                  for b in torch.utils.data.DataLoader(TorchStream(), num_workers=2,
                                                       **kwargs)]
        assert ours == theirs, kwargs
        results.append(ours)
    assert results[0] == [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]   # interleaved by worker


class Broken(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            raise ValueError(f"sample {i} is broken")
        return i


def test_a_worker_exception_is_reraised_with_its_traceback():
    loader = DataLoader(Broken(), batch_size=None, num_workers=2)
    got = []
    with pytest.raises(ValueError) as caught:
        for sample in loader:
            got.append(sample)
    message = str(caught.value)
    assert got == [0, 1, 2]
    assert message.startswith("Caught ValueError in DataLoader worker process 1.\n"
                              "Original Traceback (most recent call last):")
    assert 'raise ValueError(f"sample {i} is broken")' in message
    assert message.rstrip().endswith("ValueError: sample 3 is broken")


def test_a_failing_worker_init_fn_is_reraised():
    def init(worker_id):
        raise KeyError("no config")

    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process"):
        list(DataLoader(Broken(), num_workers=1, worker_init_fn=init, timeout=30))


class Slow(Dataset):
    def __init__(self, seconds, n=4):
        self.seconds, self.n = seconds, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.seconds)
        return i


def test_timeout_and_a_dead_worker_fail_clearly():
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.3 seconds"):
        list(DataLoader(Slow(5), num_workers=1, timeout=0.3))

    class Dies(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            os.kill(os.getpid(), signal.SIGKILL)

    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+.*\) exited "
                                           r"unexpectedly \(killed by signal: SIGKILL\)"):
        list(DataLoader(Dies(), num_workers=2))
    assert time.monotonic() - start < 30


def test_an_early_break_and_an_error_leave_no_worker_behind():
    loader = DataLoader(Slow(0.01, n=40), batch_size=2, num_workers=2)
    iterator = iter(loader)
    next(iterator)
    pids = [w.pid for w in iterator.workers]
    assert all(_alive(p) for p in pids)
    del iterator
    gc.collect()
    assert not any(_alive(p) for p in pids)
    for _ in DataLoader(Slow(0.01, n=40), batch_size=2, num_workers=2):
        break
    gc.collect()
    assert not [c for c in _children() if c not in pids]


def _children():
    try:
        with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
            return [int(p) for p in f.read().split() if _alive(int(p))]
    except OSError:
        pytest.skip("no /proc children list to check for stray processes")


def test_persistent_workers_serve_every_pass():
    persistent = DataLoader(Pids(6), batch_size=None, num_workers=2, persistent_workers=True)
    first = {s[1] for s in persistent}
    second = {s[1] for s in persistent}
    assert first == second and len(first) == 2
    half = iter(persistent)
    next(half)                                    # a pass abandoned midway
    assert [s[0] for s in persistent] == list(range(6))
    fresh = DataLoader(Pids(6), batch_size=None, num_workers=2)
    assert {s[1] for s in fresh}.isdisjoint({s[1] for s in fresh})
    stream = DataLoader(Stream(), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in stream] == [b.tolist() for b in stream]


def test_spawn_context_and_prefetch_factor():
    ds = TensorDataset(ta.arange(8))
    loader = DataLoader(ds, batch_size=2, num_workers=1, multiprocessing_context="spawn",
                        prefetch_factor=3)
    assert [b[0].tolist() for b in loader] == [[0, 1], [2, 3], [4, 5], [6, 7]]


class Big(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return np.full((64, 64), i, np.float64)          # 32 KiB each, 128 KiB a batch


def _is_mapped(array):
    import mmap
    while isinstance(array, np.ndarray):
        array = array.base
    return isinstance(getattr(array, "obj", array), mmap.mmap)


def _our_shm_files():
    return [f for f in os.listdir("/dev/shm") if f.startswith("tinyattn-")] \
        if os.path.isdir("/dev/shm") else []


def test_batches_travel_through_shared_memory_and_leave_nothing():
    """As torch's: every batch tensor arrives in shared memory (``is_shared()``), mapped,
    not unpickled; a batch nobody reads (an early break) leaves no file and no descriptor
    (tests/test_multiprocessing_sharing.py tests each way a process can end)."""
    from tinyattn.tensor import shared_memory
    before, descriptors = _our_shm_files(), shared_memory.open_descriptors()
    batches = list(DataLoader(Big(), batch_size=4, num_workers=2))
    assert [b.shape for b in batches] == [(4, 64, 64), (2, 64, 64)]
    np.testing.assert_array_equal(batches[0].numpy()[:, 0, 0], [0, 1, 2, 3])
    assert _is_mapped(batches[0]._data) and batches[0].is_shared()
    small = next(iter(DataLoader(Big(), batch_size=1, num_workers=1)))
    assert _is_mapped(small._data) and small.is_shared()        # torch shares them all
    assert not next(iter(DataLoader(Big(), batch_size=1))).is_shared()     # in-process
    assert shared_memory.open_descriptors() > descriptors        # the check can see them
    for _ in DataLoader(Big(), batch_size=4, num_workers=2, prefetch_factor=4):
        break
    del batches, small, _
    gc.collect()
    assert _our_shm_files() == before
    assert shared_memory.open_descriptors() == descriptors


def test_option_errors_and_the_pin_memory_warning_match_torch():
    torch = pytest.importorskip("torch", reason="torch's messages are the oracle")
    for kwargs in (dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
                   dict(persistent_workers=True), dict(multiprocessing_context="fork"),
                   dict(num_workers=1, multiprocessing_context="bogus")):
        with pytest.raises(ValueError) as theirs:
            list(torch.utils.data.DataLoader(range(4), **kwargs))
        with pytest.raises(ValueError) as ours:
            list(DataLoader(range(4), **kwargs))
        assert str(ours.value) == str(theirs.value), kwargs
    with pytest.warns(UserWarning) as theirs:
        list(torch.utils.data.DataLoader(range(2), pin_memory=True))
    with pytest.warns(UserWarning) as ours:
        assert [b.tolist() for b in DataLoader(range(2), pin_memory=True)] == [[0], [1]]
    assert str(ours[0].message) == str(theirs[0].message)


def test_ctrl_c_in_the_loop_leaves_no_worker_behind(tmp_path):
    program = tmp_path / "loop.py"
    program.write_text(
        "import os, sys, time\n"
        "from tinyattn.utils.data import DataLoader, Dataset\n"
        "class Slow(Dataset):\n"
        "    def __len__(self): return 10 ** 6\n"
        "    def __getitem__(self, i):\n"
        "        time.sleep(0.01); return i\n"
        "it = iter(DataLoader(Slow(), batch_size=2, num_workers=2))\n"
        "print(*[w.pid for w in it.workers], flush=True)\n"
        "for batch in it:\n"
        "    pass\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    process = subprocess.Popen([sys.executable, str(program)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    pids = [int(p) for p in process.stdout.readline().split()]
    assert len(pids) == 2
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert "KeyboardInterrupt" in err and process.returncode != 0
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def test_two_workers_feed_a_loop_faster_than_none_when_samples_take_time():
    """Each sample waits 4 ms (like reading a file); the loop's own step takes 2 ms.
    Measured wall time with the workers' start, best of two or three (this machine is shared:
    400 samples, so that starting the workers under a loaded CPU stays a small part)."""
    def run(workers):
        loader = DataLoader(Slow(0.004, n=400), batch_size=4, num_workers=workers)
        start = time.perf_counter()
        for _ in loader:
            time.sleep(0.002)
        return time.perf_counter() - start
    serial = min(run(0) for _ in range(2))
    parallel = min(run(2) for _ in range(3))
    assert parallel < 0.85 * serial, (serial, parallel)


def _collate_and_report(samples):
    batch = default_collate(samples)
    return batch, ta.tensor(batch.is_shared())


def test_a_worker_collates_straight_into_shared_memory():
    """As torch's default_collate: in a worker the batch is stacked into shared memory (one
    copy of its bytes; sending it then moves nothing), in the main process into ordinary
    memory (the negative control)."""
    batches = list(DataLoader(Big(), batch_size=3, num_workers=1,
                              collate_fn=_collate_and_report))
    assert [flag.item() for _, flag in batches] == [True, True]
    assert all(batch.is_shared() for batch, _ in batches)
    assert not default_collate([ta.ones(2), ta.ones(2)]).is_shared()
