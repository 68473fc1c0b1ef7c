"""Tensors sent to other processes, observed: run by tests/test_multiprocessing_sharing.py
with tinyattn and with PyTorch, which must observe the same.

    python tests/multiprocessing_sharing_script.py {tinyattn|torch} {fork|spawn} {queue|...}

prints one JSON line of what the sender and the receiver saw.
"""
import json
import pickle
import sys

if sys.argv[1] == "torch":
    import torch
    import torch.multiprocessing as mp
else:
    import tinyattn as torch
    import tinyattn.multiprocessing as mp

WAIT = 60


def make_tensors():
    """One of each kind the brief names: dtypes, a view, 0-d, empty, a Parameter."""
    base = torch.arange(12, dtype=torch.float32)
    return base, {
        "view": base[2:10:3],                     # a strided view: offset 2, stride 3
        "int64": torch.tensor([1, 2, 3]),
        "bool": torch.tensor([True, False]),
        "float16": torch.tensor([1.5, 2.5], dtype=torch.float16),
        "bfloat16": torch.tensor([1.5, 2.5], dtype=torch.bfloat16),
        "zero_d": torch.tensor(7.0),
        "empty": torch.zeros(0),
        "param": torch.nn.Parameter(torch.ones(3)),
        "matrix_t": torch.arange(6.0).reshape(2, 3).t(),     # a transposed view
    }


def describe(t):
    # an empty tensor's strides are left out: tinyattn's follow NumPy's there (0), not torch's
    stride = list(t.stride()) if t.numel() else None
    return {"shared": bool(t.is_shared()), "shape": list(t.shape), "stride": stride,
            "dtype": str(t.dtype).replace("torch.", ""), "requires_grad": t.requires_grad,
            "type": type(t).__name__, "values": values(t)}


def values(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def write_first(t, value):
    """An in-place write to the first element (as the receiver's own tensor)."""
    if t.numel() == 0:
        return
    with torch.no_grad():
        if t.dim() == 0:
            t.fill_(value)
        else:
            t[(0,) * t.dim()] = True if t.dtype == torch.bool else value


def receiver(inbox, outbox, go_on):
    received = inbox.get(timeout=WAIT)
    seen = {name: describe(t) for name, t in received.items()}
    for t in received.values():
        write_first(t, 99)
    outbox.put(seen)
    go_on.wait(WAIT)                      # the sender has written after sending
    outbox.put({name: values(t) for name, t in received.items()})


def receiver_of_args(index_or_tensors, *rest):
    """For Process(args=...) and spawn(args=...): the tensors come as arguments."""
    tensors, outbox, go_on = rest if isinstance(index_or_tensors, int) else \
        (index_or_tensors,) + rest
    seen = {name: describe(t) for name, t in tensors.items()}
    for t in tensors.values():
        write_first(t, 99)
    outbox.put(seen)
    go_on.wait(WAIT)
    outbox.put({name: values(t) for name, t in tensors.items()})


def main(context_name, how):
    context = mp.get_context(context_name)
    base, tensors = make_tensors()
    outbox, go_on = context.Queue(), context.Event()
    if how == "queue":
        inbox = context.Queue()
        process = context.Process(target=receiver, args=(inbox, outbox, go_on))
        process.start()
        inbox.put(tensors)
    elif how == "args":
        process = context.Process(target=receiver_of_args, args=(tensors, outbox, go_on))
        process.start()
    elif how == "spawn":
        process = mp.spawn(receiver_of_args, args=(tensors, outbox, go_on), nprocs=1,
                           join=False, start_method=context_name)
    seen = outbox.get(timeout=WAIT)
    after_child_wrote = {name: values(t) for name, t in tensors.items()}
    sender_shared = {name: bool(t.is_shared()) for name, t in tensors.items()}
    sender_shared["base"] = bool(base.is_shared())
    for t in tensors.values():            # the sender writes after sending
        write_first(t, -5)
    go_on.set()
    child_saw = outbox.get(timeout=WAIT)
    process.join(WAIT)
    return {"received": seen, "sender_after_child_wrote": after_child_wrote,
            "sender_is_shared": sender_shared, "child_after_sender_wrote": child_saw,
            "base_after": values(base)}


def add_one(t):
    t.add_(1)
    return t.is_shared()


def triple_what_comes_through(connection):
    received = connection.recv()
    received.mul_(3)
    connection.send("done")


def pool_and_pipe():
    """A Pool's task argument and a Pipe's message, with each start method."""
    out = {}
    for method in ("fork", "spawn", "forkserver"):
        context = mp.get_context(method)
        to_pool = torch.ones(3)
        with context.Pool(1) as pool:
            shared_in_worker = pool.apply(add_one, (to_pool,))
        ours, theirs = context.Pipe()
        piped = torch.ones(2)
        process = context.Process(target=triple_what_comes_through, args=(theirs,))
        process.start()
        ours.send(piped)
        ours.recv()
        process.join(WAIT)
        out[method] = {"pool": values(to_pool), "pool_shared": shared_in_worker,
                       "sender_shared": bool(to_pool.is_shared()), "pipe": values(piped)}
    return out


def checks():
    """What does not need a second process: the refusal, and pickle's copy."""
    out = {}
    computed = torch.ones(2, requires_grad=True) * 2
    try:
        mp.Queue  # noqa: B018 - the package is imported; its reductions are registered
        from multiprocessing.reduction import ForkingPickler
        ForkingPickler.dumps(computed)
        out["non_leaf"] = "sent"
    except RuntimeError as error:
        out["non_leaf"] = str(error)
    kept = torch.zeros(3)
    copy = pickle.loads(pickle.dumps(kept))
    copy.add_(1)
    out["pickle"] = {"shared": bool(kept.is_shared()), "original": values(kept)}
    return out


if __name__ == "__main__":
    if sys.argv[2] == "checks":
        print(json.dumps(checks()))
    elif sys.argv[2] == "pool_pipe":
        print(json.dumps(pool_and_pipe()))
    else:
        print(json.dumps(main(sys.argv[2], sys.argv[3])))
    sys.stdout.flush()
