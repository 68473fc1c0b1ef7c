"""A rank that hangs or dies: python faults.py {hang|die}. Rank 1 misbehaves before the
first collective; the others must fail with a clear error, never wait forever.
python faults.py loop: every rank all-reduces forever (to be interrupted)."""
import datetime
import os
import sys
import time

import tinyattn as ta
import tinyattn.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=3))
print(f"rank {dist.get_rank()} env", os.environ["RANK"], os.environ["LOCAL_RANK"],
      os.environ["WORLD_SIZE"], os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"],
      flush=True)
if sys.argv[1] == "loop":
    print("pid", os.getpid(), flush=True)
    while True:
        dist.all_reduce(ta.ones(4))
        time.sleep(0.01)
if dist.get_rank() == 1:
    if sys.argv[1] == "hang":
        time.sleep(120)
    else:
        os._exit(3)
dist.all_reduce(ta.ones(2))
print("rank", dist.get_rank(), "finished (should not happen)", flush=True)
