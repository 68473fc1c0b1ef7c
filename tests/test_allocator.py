"""tinyattn keeps freed heap memory for the next step (backend.tune_allocator, documented in
docs/benchmarks.md#memory-reuse): in a process that imports tinyattn alone, a loop that
allocates and frees the same large arrays no longer faults its pages in afresh each time;
the user's own choice (TINYATTN_SYSTEM_MALLOC=1, or glibc's MALLOC_*_THRESHOLD_ variables)
leaves glibc alone."""
from __future__ import annotations

import json
import os
import pathlib
import platform
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
glibc = pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] !=
                           "glibc", reason="the tuning applies to glibc's allocator only")

PROGRAM = """
import json, resource, numpy as np
import tinyattn.backend as backend
def work():
    a = np.ones((1024, 1024), np.float32)            # 4 MiB, above glibc's default threshold
    b = a * 2.0
    return float(b[0, 0])
work()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    work()
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20
print(json.dumps({"tuning": backend.ALLOCATOR_TUNING, "faults": faults,
                  "torch": "torch" in __import__("sys").modules}))
"""


def _run(**env):
    clean = {k: v for k, v in os.environ.items()
             if k not in ("TINYATTN_SYSTEM_MALLOC", "MALLOC_MMAP_THRESHOLD_",
                          "MALLOC_TRIM_THRESHOLD_")}
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                         env=dict(clean, PYTHONPATH=str(ROOT), **env), check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


@glibc
def test_freed_arrays_are_reused_without_page_faults():
    tuned = _run()
    assert tuned["tuning"] and "32 MiB" in tuned["tuning"] and not tuned["torch"]
    # two 4 MiB arrays per call: about 2,000 faults each call when mapped afresh
    assert tuned["faults"] < 100, tuned


@glibc
def test_the_user_can_leave_glibc_alone_and_then_pays_the_faults():
    # glibc's own dynamic threshold sometimes keeps a 4 MiB block and sometimes not; a fixed
    # low threshold (as benchmarks/memory.py sets) maps every large array afresh, every time
    untouched = _run(TINYATTN_SYSTEM_MALLOC="1", MALLOC_MMAP_THRESHOLD_="131072")
    assert untouched["tuning"] is None
    assert untouched["faults"] > 1000, untouched      # the negative control: the cost is real


@glibc
def test_a_threshold_the_user_set_is_respected():
    assert _run(MALLOC_MMAP_THRESHOLD_="131072")["tuning"] is None
    assert _run(MALLOC_TRIM_THRESHOLD_="1000000")["tuning"] is None
