"""Shared tensors and every way a process can end: run by tests/test_multiprocessing_sharing.py,
which counts what is left in /dev/shm afterwards.

    python tests/multiprocessing_leak_script.py CONTEXT EXITS MODE TAG

CONTEXT: fork or spawn. EXITS: how the child ends, one or more of normal, exception,
os_exit, sigkill, sigint (Ctrl-C reaches the whole process group: it must come last), and
loader (DataLoader workers, left by an early break), separated by commas. MODE: the memory
is made with memfd ("memfd", the default), with a /dev/shm file whose name is removed at
once ("fallback"), or, as the negative control, with that name kept ("fallback-kept"). The
memory's name starts with tinyattn-shared-TAG, so that the test counts this run's files.
Prints one JSON line: for each exit, what the parent saw, and its shared-memory descriptors
and mappings once everything is gone.
"""
import gc
import json
import os
import signal
import sys
import time

import numpy as np

import tinyattn as ta
import tinyattn.multiprocessing as mp
from tinyattn.tensor import shared_memory
from tinyattn.utils.data import DataLoader

WAIT = 60
if len(sys.argv) > 4:                                      # spawned children re-run this
    shared_memory.use_memfd = sys.argv[3] == "memfd"
    shared_memory.unlink_fallback_name = sys.argv[3] != "fallback-kept"
    shared_memory._NAME = f"tinyattn-shared-{sys.argv[4]}"


def held_by_this_process():
    """Descriptors and mappings of tinyattn's shared memory, read from /proc (not from
    tinyattn's own bookkeeping)."""
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    with open("/proc/self/maps") as handle:
        maps = [line for line in handle if "tinyattn-shared" in line]
    return sum("tinyattn-shared" in n for n in names), len(maps)


def child(inbox, outbox, how):
    received = inbox.get(timeout=WAIT)
    received[0] = 42.0                              # the parent must see this
    made_here = ta.full((256, 256), 7.0)            # a tensor the child sends back
    outbox.put(made_here)
    outbox.put("sent")
    if how == "exception":
        time.sleep(0.5)
        raise ValueError("the child fails on purpose")
    if how == "os_exit":
        time.sleep(0.5)
        os._exit(3)
    if how in ("sigkill", "sigint"):
        time.sleep(WAIT)                            # until killed / interrupted
    time.sleep(0.5)


class Samples:
    def __len__(self):
        return 64

    def __getitem__(self, index):
        return np.full((128, 128), index, np.float32)


def main(context_name, how):
    seen = {}
    if how == "loader":
        loader = DataLoader(Samples(), batch_size=4, num_workers=2,
                            multiprocessing_context=context_name)
        for batch in loader:
            seen["batch_shared"] = batch.is_shared()
            break
        del loader, batch
    else:
        context = mp.get_context(context_name)
        inbox, outbox = context.Queue(), context.Queue()
        sent = ta.zeros(256, 256)
        process = context.Process(target=child, args=(inbox, outbox, how))
        process.start()
        inbox.put(sent)
        back = outbox.get(timeout=WAIT)
        assert outbox.get(timeout=WAIT) == "sent"
        seen["child_wrote"] = float(sent[0, 0])
        seen["back"] = float(back[0, 0])
        seen["held_while_alive"] = held_by_this_process()
        try:
            if how == "sigkill":
                os.kill(process.pid, signal.SIGKILL)
            if how == "sigint":
                assert os.getpgid(0) == os.getpid(), "run me in a session of my own"
                os.killpg(os.getpgid(0), signal.SIGINT)     # Ctrl-C: the whole group
                time.sleep(WAIT)
        except KeyboardInterrupt:
            seen["interrupted"] = True
        process.join(WAIT)
        seen["exitcode"] = process.exitcode
        del sent, back
    gc.collect()
    seen["held_at_end"] = held_by_this_process()
    return seen


if __name__ == "__main__":
    print(json.dumps({how: main(sys.argv[1], how) for how in sys.argv[2].split(",")}),
          flush=True)
