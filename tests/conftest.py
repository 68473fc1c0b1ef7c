"""Shared test settings: one BLAS/OpenMP thread per test process; hypothesis profile sized for
a 2-core CI machine; tinyattn's bytecode compiled once for the processes the suite starts."""
import os
import signal
import sys
from pathlib import Path

# One thread per BLAS (NumPy's OpenBLAS, torch's MKL/OpenMP) in every test process. The suite
# runs one xdist worker per core, and most tests start more processes (training runs, MPI
# ranks, DataLoader workers, notebook kernels); with each BLAS starting a thread per core the
# threads outnumber the cores and spin-wait for each other. Measured on the 2-core machine
# (quiet, same tree): 1,345 s of CPU and 721 s wall with the libraries' defaults, 1,162 s and
# 630 s with one thread, every test passing both ways. Set here, before the workers start, so
# every process inherits it; a value set by the user is kept (the set_num_threads tests in
# tests/test_run_torch_threads_optim.py set their own counts explicitly).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

from hypothesis import settings

settings.register_profile("tinyattn", max_examples=25, deadline=None)
settings.load_profile("tinyattn")


# A suite started in the background by a non-interactive shell (`cmd &`, as some CI runners
# and scripts do) inherits SIGINT *ignored*, and so does every process it starts: then the
# tests that press Ctrl-C on a training run, a DataLoader loop, an MPI job or the exercise
# checker see nothing happen (they wait out their timeouts and fail). Python's own handler
# here (reset to the default in each child at exec) gives them the SIGINT a terminal would.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config):
    """Compile tinyattn to bytecode once, before the workers start, where Python was told not
    to write it (PYTHONDONTWRITEBYTECODE, as in some containers). Many of the suite's tests
    start Python processes that import tinyattn (besides the xdist workers: each test's
    subprocess, spawn and DataLoader workers, MPI ranks, notebook kernels); without the .pyc
    files each of them compiles tinyattn's ~300 modules from source again, about 0.8 s of CPU
    each. These are the
    __pycache__ files Python writes by itself without the variable (.gitignore keeps them out
    of git), checked against the source's time stamp and size as Python's own are;
    compiling writes nothing when they are up to date. A read-only checkout compiles nothing
    and the suite runs as before. Then the same for the test files themselves: pytest's
    cache of their assertion-rewritten code (_cache_rewritten_tests)."""
    if not sys.dont_write_bytecode or hasattr(config, "workerinput"):
        return                  # Python caches by itself, or this is an xdist worker
    import compileall
    compileall.compile_dir(str(Path(__file__).resolve().parent.parent / "tinyattn"),
                           quiet=2)
    _cache_rewritten_tests(config)


def _cache_rewritten_tests(config):
    """Write pytest's cache of the assertion-rewritten test modules, which pytest itself
    only writes when Python may write bytecode. Every test process (each xdist worker, and
    each pytest a test starts) imports the test files it collects through pytest's
    assertion rewriting: parse, rewrite every assert, compile. Over the suite's ~210 files
    that is about 14 s of CPU per process (measured under load: collection 35 s of CPU
    with rewriting, 21 s with --assert=plain), paid again by every worker of every run when
    nothing is cached. With the cache each process reads the rewritten code instead.

    The files are pytest's own (__pycache__/*.cpython-XY-pytest-Z.pyc, what it writes by
    default), written through pytest's own functions, and pytest reads one only when the
    hash of the source it records matches the file (a changed test is rewritten again).
    These functions are pytest internals: if a pytest release changes them, the error is
    swallowed and the suite runs as before, rewriting in each process."""
    try:
        from _pytest.assertion.rewrite import (PYC_TAIL, _read_pyc, _rewrite_test,
                                               _write_pyc, assertstate_key, get_cache_dir)
        from _pytest.pathlib import fnmatch_ex
        if config.getoption("assertmode") != "rewrite":
            return
        state = config.stash[assertstate_key]
        patterns = list(config.getini("python_files")) + ["conftest.py"]
        roots = [Path(str(arg).split("::")[0]).resolve() for arg in config.args] or \
            [Path(__file__).resolve().parent]
        files = set()
        for root in roots:
            candidates = [root] if root.is_file() else root.rglob("*.py")
            files.update(path for path in candidates
                         if any(fnmatch_ex(pattern, path) for pattern in patterns))
    except Exception:           # noqa: BLE001 - an optimisation only; see the docstring
        return
    for path in sorted(files):
        try:
            cache_dir = get_cache_dir(path)
            pyc = cache_dir / (path.name[:-3] + PYC_TAIL)
            if _read_pyc(path, pyc) is not None:
                continue                        # up to date
            cache_dir.mkdir(parents=True, exist_ok=True)
            source_hash, code = _rewrite_test(path, config)
            _write_pyc(state, code, source_hash, pyc)
        except Exception:       # noqa: BLE001 - this file is rewritten when imported, as before
            continue


# The longest files (each test starts processes: MPI jobs, spawn workers, notebook kernels,
# the benchmarks and examples, training runs), longest first. They run before everything
# else: xdist hands out the tests in collection order, and with these last one worker would
# still be in a minute-long test while the other had nothing left to do.
SLOW_FIRST = ("test_distributed_processes.py", "test_multiprocessing_sharing.py",
              "test_tools_smoke.py", "test_notebooks.py", "test_train.py", "test_vit.py",
              "test_explore.py")


def pytest_collection_modifyitems(items):
    """SLOW_FIRST's files to the front, in that order; the rest keep their order (the sort is
    stable), and so does each file's own."""
    rank = {name: index for index, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def squash(text: str) -> str:
    """``text`` with every run of whitespace made one space: compare messages with this, so a
    test does not depend on where a message wraps (path length, user name, terminal width)."""
    return " ".join(str(text).split())


def pytest_terminal_summary(terminalreporter):
    """The conformance run's summary: cases that agree, and each skip-table reason with how
    many cases it covered (tests/conformance/summary.py)."""
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from conformance.summary import write_summary
    finally:
        sys.path.pop(0)
    write_summary(terminalreporter)
