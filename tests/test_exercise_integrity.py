"""Attacks on the checker: learner code that exits, interrupts, patches NumPy, loops, floods
the output, forges result files, returns odd objects. Each runs through the real, isolated
check (the learner's file in its own process); none may give PASS or crash or hang the
checker, and each failure says what happened. Plus the transport's own validation."""
from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import squash
from tinyattn.exercises import check, find_exercise
from tinyattn.exercises.checker import SOLUTIONS_DIR
from tinyattn.exercises.transport import TransportError, decode, encode

REPO = Path(__file__).resolve().parents[1]
SOFTMAX = "    return y * (grad - (grad * y).sum(axis=-1, keepdims=True))"
WRONG_SOFTMAX = "    return grad * y * (1 - y)"


def _plant(tmp_path, name, old, new):
    exercise = find_exercise(name)
    source = (SOLUTIONS_DIR / exercise.filename).read_text()
    assert old in source
    (tmp_path / exercise.filename).write_text(source.replace(old, new, 1))
    return exercise


def _softmax(tmp_path, top="", body=SOFTMAX):
    """06_softmax.py with ``top`` after the import and ``body`` as the backward's return."""
    _plant(tmp_path, "softmax", "import numpy as np\n", "import numpy as np\n" + top)
    source = (tmp_path / "06_softmax.py").read_text().replace(SOFTMAX, body)
    (tmp_path / "06_softmax.py").write_text(source)


# (name, top-of-file code, backward body, diagnosis kind that must be reported)
ATTACKS = [
    ("sys.exit(0) at import", "import sys\nsys.exit(0)\n", SOFTMAX, "exit"),
    ("exit() in the backward, after a debug print", "",
     "    print('debug', grad.shape)\n    exit()", "exit"),
    ("raise SystemExit(0) in the backward", "", "    raise SystemExit(0)", "exit"),
    ("raise KeyboardInterrupt in the backward", "", "    raise KeyboardInterrupt", "interrupt"),
    ("KeyboardInterrupt at import", "raise KeyboardInterrupt\n", SOFTMAX, "interrupt"),
    ("os._exit(0) in the backward", "import os\n", "    os._exit(0)", "ended"),
    ("np.allclose and np.abs patched, a wrong backward",
     "np.allclose = lambda *a, **k: True\nnp.abs = lambda x: 0 * x\n"
     "np.isclose = lambda *a, **k: True\n", WRONG_SOFTMAX, "diagonal"),
    ("np.float64 = np.float32, a wrong backward", "np.float64 = np.float32\n", WRONG_SOFTMAX,
     "diagonal"),
    ("np.testing and np.linalg.norm patched, a wrong backward",
     "np.testing.assert_allclose = lambda *a, **k: None\nnp.linalg.norm = lambda *a, **k: 0.0\n",
     WRONG_SOFTMAX, "diagonal"),
    ("np.stack and np.array replaced (the runner uses them)",
     "np.stack = lambda *a, **k: None\nnp.array = lambda *a, **k: None\n", WRONG_SOFTMAX,
     None),
    ("result files forged at exit", "import atexit, sys, os\natexit.register(lambda: [open("
     "os.path.join(sys.argv[1], f), 'wb').write(b'junk') for f in os.listdir(sys.argv[1]) if "
     "f.endswith('.bin')])\n", WRONG_SOFTMAX, None),
    ("a forged 'done' message with right-shaped random arrays", "import atexit, sys, os\n"
     "from transport import encode\n"
     "def forge():\n"
     "    rec = {'status': 'ran', 'cases': [{'status': 'ok'}] * 4}\n"
     "    arr = {f'c{c}_out': np.zeros((3, 5)) for c in range(4)}\n"
     "    arr.update({f'c{c}_g0': np.zeros((17, 3, 5)) for c in range(4)})\n"
     "    open(os.path.join(sys.argv[1], 'part_0.bin'), 'wb').write(encode(rec, arr))\n"
     "atexit.register(forge)\n", WRONG_SOFTMAX, None),
    ("returns float32", "", SOFTMAX.replace("return ", "return (") + ").astype(np.float32)",
     "float32"),
    ("returns a list", "", SOFTMAX.replace("return ", "return (") + ").tolist()", "type"),
    ("returns an object array", "", "    return np.array([None], dtype=object)", "type"),
    ("reads stdin", "", "    input('value? ')\n" + SOFTMAX, "error"),
    ("closes its stdout", "import os\n", "    os.close(1)\n    print('gone')\n" +
     WRONG_SOFTMAX, "error"),
]


@pytest.mark.parametrize("name, top, body, kind", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_an_attack_never_passes(name, top, body, kind, tmp_path):
    _softmax(tmp_path, top, body)
    result = check("softmax", tmp_path, timeout=30)
    assert not result.passed, result.text
    assert "Traceback (most recent call last)" not in result.text
    if kind is not None:
        assert result.parts[0].diagnosis.kind == kind, result.text


def test_numpy_patched_at_import_cannot_break_a_right_answer(tmp_path):
    """The verdict is computed here, with a clean NumPy: a right backward still passes."""
    _softmax(tmp_path, "np.allclose = lambda *a, **k: False\nnp.abs = None\n"
                       "np.stack = None\n")
    assert check("softmax", tmp_path).passed


def test_an_endless_loop_is_stopped_with_a_message_that_says_so(tmp_path):
    # The loop sleeps: the checker stops it from outside (it waits, then ends the child), as
    # it does a busy one, which the import-time test below plants; a busy loop here would
    # burn the whole 10 s of CPU.
    _softmax(tmp_path, top="import time\n", body="    while True:\n        time.sleep(0.05)")
    started = time.perf_counter()
    result = check("softmax", tmp_path, timeout=10)        # room for a slow import under load
    assert time.perf_counter() - started < 120
    assert result.parts[0].status == "timeout" and not result.passed
    text = squash(result.text)
    assert "stopped after 10 s" in text and "softmax_backward, case 1" in text


def test_an_endless_loop_at_import_is_stopped(tmp_path):
    _softmax(tmp_path, "while True:\n    pass\n")
    result = check("softmax", tmp_path, timeout=2)
    assert not result.passed and "did not finish in 2 s" in squash(result.text)


def test_a_flood_of_output_is_counted_not_kept(tmp_path):
    _softmax(tmp_path, "import sys\nsys.stdout.write('x' * 30_000_000)\n")
    result = check("softmax", tmp_path, timeout=60)
    assert result.passed                                    # printing is not an error ...
    assert "more than" in squash(result.text) and "30,000,000 bytes" in squash(result.text)
    assert len(result.output) <= 64 * 1024                  # ... and is not kept in memory


@pytest.mark.parametrize("body, kind", [
    ("    dlogits = np.exp(logp)\n    dlogits[np.arange(n), target] -= 1.0\n"
     "    return dlogits / n", "ignores_grad"),                  # p / n for cross-entropy
])
def test_a_backward_that_ignores_its_scalar_gradient_fails(tmp_path, body, kind):
    old = ("    dlogits = np.exp(logp)                      # p, (N, C)\n"
           "    dlogits[np.arange(n), target] -= 1.0        # p - onehot(target)\n"
           "    return dlogits * (grad / n)")
    _plant(tmp_path, "log_softmax_nll", old, body)
    result = check("cross_entropy", tmp_path)
    part = next(p for p in result.parts if p.part == "cross_entropy")
    assert not part.passed and part.diagnosis.kind == kind


def test_a_full_sum_answered_with_ones_fails(tmp_path):
    _plant(tmp_path, "reductions", "    return expand_back(grad, shape, axis, keepdims)\n\n\n",
           "    return np.ones(shape)\n\n\n")
    result = check("reductions", tmp_path)
    assert not result.parts[0].passed and result.parts[0].diagnosis.kind == "ignores_grad"


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "tinyattn.exercises", *args], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_check_all_streams_each_result_and_ctrl_c_ends_cleanly(tmp_path):
    (tmp_path / "01_broadcast.py").write_text((SOLUTIONS_DIR / "01_broadcast.py").read_text())
    _plant(tmp_path, "reductions", "    shape, axis, keepdims = cache\n    return",
           "    shape, axis, keepdims = cache\n    while True:\n        pass\n    return")
    process = _cli("check", "all", "--path", str(tmp_path), "--timeout", "60")
    first = process.stdout.readline()                       # 01 is reported while 02 loops
    assert first.startswith("01 broadcast") and "PASSED" in first
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=300)             # generous: the machine may be busy
    assert process.returncode == 130
    assert "interrupted" in err and "Traceback" not in err + out


def test_exit_status_is_not_zero_when_anything_fails(tmp_path):
    _softmax(tmp_path, "import sys\nsys.exit(0)\n")
    process = _cli("check", "softmax", "--path", str(tmp_path))
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1 and "SystemExit" in out


# ------------------------------------------------------------------ the transport
def _message(header, payload=b""):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + payload


def test_transport_round_trip_and_refusals():
    record, arrays = decode(encode({"a": [1, "x"]}, {"g": np.arange(6.0).reshape(2, 3)}))
    assert record == {"a": [1, "x"]} and arrays["g"].shape == (2, 3)
    assert arrays["g"].flags.writeable and type(arrays["g"]) is np.ndarray
    meta = {"dtype": "<f8", "shape": [2], "offset": 0, "nbytes": 16}
    bad = [b"", b"\x00" * 4, struct.pack("<Q", 999) + b"{}",
           _message({"record": 1}),
           _message({"record": 1, "arrays": {"g": dict(meta, dtype="|O")}}, bytes(16)),
           _message({"record": 1, "arrays": {"g": dict(meta, nbytes=8)}}, bytes(16)),
           _message({"record": 1, "arrays": {"g": dict(meta, offset=8)}}, bytes(16)),
           _message({"record": 1, "arrays": {"g": dict(meta, shape=[-2])}}, bytes(16)),
           _message({"record": 1, "arrays": {"g": dict(meta, shape="2")}}, bytes(16))]
    for message in bad:
        with pytest.raises(TransportError):
            decode(message)


@pytest.mark.parametrize("length", range(1, 130))
def test_a_message_reads_the_same_whatever_the_length_of_the_path(length):
    """A fresh machine's temporary folder has its own length: where the message wraps moves,
    and a test compares it with whitespace squashed; the checker keeps "2 s" on one line."""
    from tinyattn.exercises.checker import _import_failure
    from tinyattn.exercises.isolation import ChildRun
    run = ChildRun()
    run.imported, run.timed_out = None, True
    text = _import_failure("/tmp/" + "p" * length + "/06_softmax.py", run, 2).text
    assert "did not finish in 2 s" in squash(text)
    assert all(not line.rstrip().endswith(" 2") for line in text.splitlines()), text


def test_a_stale_bytecode_cache_never_decides_a_verdict(tmp_path):
    """train --backward-from imports the learner's file and leaves __pycache__; a wrong edit
    of the same size with the same modification time (same second, or cp -p) then matched
    the cached bytecode of the right file, and the check said PASSED."""
    from tinyattn.exercises.checker import load_file
    _softmax(tmp_path)
    path = tmp_path / "06_softmax.py"
    stat = path.stat()
    sys.dont_write_bytecode, before = False, sys.dont_write_bytecode
    try:
        load_file(path)                                   # as train --backward-from does
    finally:
        sys.dont_write_bytecode = before
    wrong = path.read_text().replace("(grad * y).sum(axis=-1", "(grad + y).sum(axis=-1")
    assert len(wrong) == stat.st_size and wrong != path.read_text()
    path.write_text(wrong)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert not check("softmax", tmp_path).passed
    assert not list(tmp_path.glob("__pycache__/*.pyc"))   # and nothing is cached any more
