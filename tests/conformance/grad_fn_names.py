"""grad_fn names, torch's against tinyattn's, over op_db's differentiable samples (up to 4 per
entry, the first output): ``python -m tests.conformance.grad_fn_names [dtype [op ...]]`` lists
each entry whose names differ, as (torch's, tinyattn's). A report, not a test (session 39:
225 of op_db's entries still differ in float64, most where tinyattn composes an op that torch
has one node for; tests/test_small_gaps39.py pins the names fixed; session 42: 158 before
names42, 25 after, names compared as ``grad_fn.name()`` on both sides, so torch's
``torch::autograd::CopySlices`` is compared whole; tests/test_probe42_names42.py pins them)."""
import sys, collections
import torch
from torch.testing._internal.common_methods_invocations import op_db
from tests.conformance.op_runner import OpEntry, generate, _convert, quiet
from tests.conformance.convert import Unconvertible

dtype = getattr(torch, sys.argv[1]) if len(sys.argv) > 1 else torch.float64
only = sys.argv[2:] if len(sys.argv) > 2 else None
diffs = collections.defaultdict(set)
for info in op_db:  # noqa: C901 - a flat report loop
    if only and info.name not in only:
        continue
    if not info.supports_autograd or dtype not in info.supported_dtypes("cpu"):
        continue
    entry = OpEntry.build(info)
    var = entry.function
    if var is None:
        continue
    try:
        samples = generate(info, "gradients", dtype, True)[:4]
    except Exception:
        continue
    for s in samples:
        try:
            conv, inp, args, kwargs = _convert(s)
        except Unconvertible:
            continue
        try:
            with quiet():
                t = var.torch_call(s.input, *s.args, **s.kwargs)
                a = var.tiny_call(inp, *args, **kwargs)
        except Exception:
            continue
        t = t[0] if isinstance(t, (tuple, list)) else t
        a = a[0] if isinstance(a, (tuple, list)) else a
        tn = t.grad_fn.name() if getattr(t, "grad_fn", None) is not None else None
        an = a.grad_fn.name() if getattr(a, "grad_fn", None) is not None else None
        if tn != an:
            diffs[entry.key].add((tn, an))
for k in sorted(diffs):
    print(k, sorted(diffs[k], key=str)[:3])
print(len(diffs), "entries differ")
