"""The child process of the checker: it runs a learner's exercise file and reports what it did.

    python runner.py DIR        (DIR holds request.pkl, written by the checker)

The checker never runs learner code itself. It writes a request (the exercise's parts, their
inputs, the upstream gradients to feed the backward), starts this script in a new process,
and reads back, for every part, a message (``transport.encode``: JSON and raw numeric arrays)
saying what the learner's functions returned or raised. The verdict is computed in the
checker's own process from those plain arrays, so nothing done here (``sys.exit``, a patched
``np.allclose``, ``np.float64 = np.float32``, a huge print, an endless loop) can make a wrong
answer pass: at worst a part's message is missing or unreadable, which is a failure.

What is recorded for a learner's function:
- op parts: the forward's output, and for each upstream gradient the backward's return
  value, stacked per input (shape (K, *input_shape)), copied as returned (dtype included);
- engine parts: whatever the part's probe (probes.py) reports, as plain values and arrays;
- an exception: its type, message, the learner's own stack lines, and the shapes of the
  arrays in the innermost learner frame (to explain a shape error in the exercise's terms).

``run_request`` also runs in the checker's process for trusted code (the test suite's
planted mistakes), through the same messages.
"""
from __future__ import annotations

import importlib.util
import os
import pickle
import sys
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

if __package__:
    from . import probes, probes_systems, probes_training, transport
else:                                           # run as a script: siblings by plain import
    import probes
    import probes_systems
    import probes_training
    import transport

__all__ = ["run_request", "load_learner_file", "learner_error", "describe", "main",
           "find_probe"]

# Bound before any learner code runs: a learner file that replaces these cannot change how
# results are written (and the checker re-validates everything it reads anyway).
_encode, _ndarray, _array, _stack = transport.encode, np.ndarray, np.array, np.stack
_open, _replace = open, os.replace
_NUMERIC = "biufc"
_MAX_TEXT = 2000


def describe(value: Any) -> str:
    """A short description of a learner's value for a message ("a list of 2 items", ...)."""
    try:
        if value is None:
            return "None"
        if isinstance(value, _ndarray):
            return f"an array of shape {tuple(value.shape)} and dtype {value.dtype}"
        if isinstance(value, (tuple, list)):
            return f"a {type(value).__name__} of {len(value)} item(s)"
        if isinstance(value, (bool, int, float, np.generic)):
            return f"a {type(value).__name__} ({value!r:.40})"
        return f"a {type(value).__name__}"
    except Exception:  # a learner's object whose repr or len raises
        return "an object that could not be described"


_NOT_LEARNER = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                     for m in (np, os, importlib.util)) + (
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,)  # tinyattn/


def _is_learner(filename: str, learner_dir: str) -> bool:
    """A frame of the learner's code: in the learner's folder, or, when the checker runs a
    module in its own process (learner_dir ""), anywhere but NumPy, Python and tinyattn."""
    if filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    if learner_dir:
        return os.path.dirname(path) == learner_dir
    return not path.startswith(_NOT_LEARNER)


def _learner_frames(error: BaseException, learner_dir: str) -> List[Any]:
    frames = []
    tb = error.__traceback__
    while tb is not None:
        if _is_learner(tb.tb_frame.f_code.co_filename, learner_dir):
            frames.append(tb)
        tb = tb.tb_next
    return frames


def _shapes_in(frame_locals: Dict[str, Any]) -> Dict[str, List[int]]:
    shapes = {}
    for name, value in list(frame_locals.items())[:60]:
        data = value
        if type(value).__name__ == "Tensor":   # the engine track's tensors: their data
            data = getattr(value, "data", None)
        if isinstance(data, _ndarray):
            shapes[str(name)[:40]] = [int(n) for n in data.shape]
    return shapes


def learner_error(error: BaseException, learner_dir: str, called: str) -> Dict[str, Any]:
    """A plain description of an exception raised by (or through) the learner's code."""
    try:
        message = str(error)[:_MAX_TEXT]
    except Exception:
        message = "(its message could not be printed)"
    frames = _learner_frames(error, learner_dir)
    trace = []
    for tb in frames[-4:]:
        summary = traceback.extract_tb(tb, limit=1)[0]
        trace.append({"file": summary.filename, "line": summary.lineno, "function": summary.name,
                      "code": (summary.line or "")[:200]})
    innermost = frames[-1] if frames else None
    try:
        shapes = _shapes_in(innermost.tb_frame.f_locals) if innermost is not None else {}
    except Exception:
        shapes = {}
    function = trace[-1]["function"] if trace else called
    return {"type": type(error).__name__, "message": message, "trace": trace,
            "shapes": shapes, "function": function, "called": called,
            "is_shape_error": isinstance(error, ValueError) and _looks_like_shape(message)}


def _looks_like_shape(message: str) -> bool:
    words = ("could not be broadcast", "mismatch in its core dimension", "not aligned",
             "cannot reshape", "out of bounds for array of dimension", "shape mismatch",
             "operands could not", "input operand", "matmul: ")
    return any(w in message for w in words)


def _readonly(value: Any) -> Any:
    if isinstance(value, _ndarray):
        view = value.view()
        view.flags.writeable = False
        return view
    if isinstance(value, tuple):
        return tuple(_readonly(v) for v in value)
    return value


def _plain(value: Any) -> Optional[np.ndarray]:
    """The learner's value as a numeric base-class array (a copy), or None if it is not one."""
    if isinstance(value, _ndarray) and value.dtype.kind in _NUMERIC:
        return _array(value, copy=True, subok=False)
    return None


# ------------------------------------------------------------------ op parts
def _gradients(returned: Any, count: int) -> Tuple[Optional[List[np.ndarray]],
                                                    Optional[Dict[str, Any]]]:
    """The returned gradients as arrays, or a description of what is wrong with them."""
    if returned is None:
        return None, {"kind": "none_all"}
    if count == 1 and not isinstance(returned, tuple):
        returned = (returned,)                  # one gradient: a list is not a container
    if not isinstance(returned, (tuple, list)) or len(returned) != count:
        n = len(returned) if isinstance(returned, (tuple, list)) else 1
        return None, {"kind": "count", "count": n, "got": describe(returned)}
    arrays = []
    for index, item in enumerate(returned):
        if item is None:
            return None, {"kind": "none", "input": index}
        plain = _plain(item)
        if plain is None:
            return None, {"kind": "type", "input": index, "got": describe(item)}
        arrays.append(plain)
    return arrays, None


def _run_op_case(module: Any, part: Dict[str, Any], case: Dict[str, Any], c: int,
                 arrays: Dict[str, np.ndarray], learner_dir: str,
                 progress: Callable[[str], None]) -> Dict[str, Any]:
    forward = getattr(module, part["forward"])
    backward = getattr(module, part["backward"])
    progress(f"{part['forward']}, case {c + 1}")
    try:
        returned = forward(*[x.copy() for x in case["inputs"]], **case["consts"])
    except BaseException as error:  # the learner's code: anything can happen
        return {"status": "error", "error": learner_error(error, learner_dir, part["forward"])}
    if not isinstance(returned, tuple) or len(returned) != 2:
        return {"status": "forward_not_pair", "got": describe(returned)}
    out, cache = returned
    plain_out = _plain(out)
    if plain_out is None:
        return {"status": "forward_bad_out", "got": describe(out)}
    arrays[f"c{c}_out"] = plain_out
    cache = _readonly(cache)
    count = len(part["inputs"])
    collected: List[List[np.ndarray]] = [[] for _ in range(count)]
    progress(f"{part['backward']}, case {c + 1}")
    for k, grad in enumerate(case["grads"]):
        try:
            returned = backward(_readonly(grad.copy()), cache)
        except BaseException as error:
            return {"status": "error", "call": k,
                    "error": learner_error(error, learner_dir, part["backward"])}
        grads, problem = _gradients(returned, count)
        if problem is not None:
            return {"status": "structure", "call": k, "problem": problem}
        for i, g in enumerate(grads):
            first = collected[i][0] if collected[i] else g
            if g.shape != first.shape or g.dtype != first.dtype:
                return {"status": "varies", "call": k, "input": i,
                        "first": [list(first.shape), first.dtype.str],
                        "now": [list(g.shape), g.dtype.str]}
            collected[i].append(g)
    for i, grads in enumerate(collected):
        arrays[f"c{c}_g{i}"] = _stack(grads)
    return {"status": "ok"}


def _run_op_part(module: Any, part: Dict[str, Any], learner_dir: str,
                 progress: Callable[[str], None]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    arrays: Dict[str, np.ndarray] = {}
    cases = []
    for c, case in enumerate(part["cases"]):
        record = _run_op_case(module, part, case, c, arrays, learner_dir, progress)
        cases.append(record)
        if record["status"] != "ok":
            break
    return {"status": "ran", "cases": cases}, arrays


# ------------------------------------------------------------------ engine parts
def find_probe(name: str) -> Callable[[Any, Dict[str, Any]], Dict[str, Any]]:
    """The probe called ``name``: probes.py, probes_training.py (engine track) or
    probes_systems.py (attention systems)."""
    for module in (probes_systems, probes_training):
        if name in module.__all__:
            return getattr(module, name)
    return getattr(probes, name)


def _run_engine_part(module: Any, part: Dict[str, Any], learner_dir: str,
                     progress: Callable[[str], None]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    probe = find_probe(part["probe"])
    arrays: Dict[str, np.ndarray] = {}
    scenarios = []
    for s, scenario in enumerate(part["scenarios"]):
        progress(f"{part['name']}, scenario {s + 1}: {scenario['label']}")
        try:
            values = probe(module, scenario["data"])
        except BaseException as error:
            scenarios.append({"status": "error",
                              "error": learner_error(error, learner_dir, part["name"])})
            break
        plain, names = {}, []
        for key, value in values.items():
            if isinstance(value, _ndarray):
                arrays[f"s{s}_{key}"] = _array(value, copy=True, subok=False)
                names.append(key)
            else:
                plain[key] = value
        scenarios.append({"status": "ok", "values": plain, "arrays": names})
    return {"status": "ran", "scenarios": scenarios}, arrays


# ------------------------------------------------------------------ the request
def load_learner_file(path: str) -> Any:
    """Import the learner's file by path (its name starts with a digit, so not by name)."""
    return load_source("exercise_" + os.path.splitext(os.path.basename(path))[0], path)


def load_source(name: str, path: str) -> Any:
    """A module made by compiling the text of ``path`` as it is on disk now: never from a
    __pycache__ file (its check is the source's modification time and size, which an edit in
    the same second at the same size, or ``cp -p``, leaves equal), and none is written."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    with open(path, "rb") as f:
        code = compile(f.read(), str(path), "exec", dont_inherit=True)
    exec(code, module.__dict__)                # noqa: S102 - the module's own code
    return module


def _write(out_dir: str, name: str, record: Any, arrays: Dict[str, np.ndarray]) -> None:
    message = _encode(record, arrays)
    temporary = os.path.join(out_dir, name + ".partial")
    with _open(temporary, "wb") as f:
        f.write(message)
    _replace(temporary, os.path.join(out_dir, name))


def run_request(module: Any, request: Dict[str, Any], out_dir: str,
                progress: Callable[[str], None] = lambda text: None) -> None:
    """Run every part of ``request`` on ``module``; write part_I.bin for each, then done.bin."""
    learner_dir = "" if request.get("in_process") else \
        os.path.dirname(os.path.abspath(request["file"]))
    for index, part in enumerate(request["parts"]):
        missing = [name for name in part["functions"] if not callable(getattr(module, name,
                                                                              None))]
        if missing:
            record, arrays = {"status": "missing_function", "function": missing[0]}, {}
        elif part["kind"] == "op":
            record, arrays = _run_op_part(module, part, learner_dir, progress)
        else:
            record, arrays = _run_engine_part(module, part, learner_dir, progress)
        _write(out_dir, f"part_{index}.bin", record, arrays)
    _write(out_dir, "done.bin", {"status": "done"}, {})


def main(argv: List[str]) -> int:
    out_dir = argv[1]
    with _open(os.path.join(out_dir, "request.pkl"), "rb") as f:
        request = pickle.load(f)               # written by the checker, before we ran
    progress_path = os.path.join(out_dir, "progress.txt")

    def progress(text: str) -> None:
        with _open(progress_path, "w") as f:
            f.write(text)

    learner_dir = os.path.dirname(os.path.abspath(request["file"]))
    sys.path.append(learner_dir)               # the learner's own helper modules, last
    progress("importing your file")
    try:
        module = load_learner_file(request["file"])
    except BaseException as error:
        record = {"status": "import_error", "error": learner_error(error, learner_dir,
                                                                   "import")}
        if isinstance(error, SyntaxError):
            record["syntax"] = {"line": error.lineno, "message": error.msg,
                                "text": (error.text or "").rstrip()[:200]}
        _write(out_dir, "import.bin", record, {})
        return 0
    _write(out_dir, "import.bin", {"status": "imported"}, {})
    run_request(module, request, out_dir, progress)
    return 0


if __name__ == "__main__":
    if not __package__ and sys.path and os.path.abspath(sys.path[0]) == \
            os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]                        # our siblings are imported; hide them again
    sys.exit(main(sys.argv))
