"""``python -m tinyattn run-torch script.py [args...]``: run a PyTorch script on tinyattn.

The script runs as ``python script.py args...`` would run it (``__name__ == "__main__"``,
``sys.argv = ["script.py", *args]``, the script's folder first on ``sys.path``), with
``import torch`` answered by tinyattn (finder.py). The exit status is the script's: 0 when
it finishes, its own for ``sys.exit(n)``, 1 when it stops on an error, 130 on Ctrl-C.
"""
from __future__ import annotations

import os
import runpy
import sys
import traceback
from typing import List, Optional, Sequence

import numpy as np

from .. import backend
from .finder import install, uninstall
from .missing import MissingTorchFeature, _is_internal, describe_location

__all__ = ["run_script", "main", "USAGE"]

USAGE = """usage: python -m tinyattn run-torch SCRIPT.py [ARGS...]

Run a PyTorch script unchanged on tinyattn: `import torch` (torch.nn, torch.nn.functional,
torch.optim, torch.autograd, torch.utils.data, ...) gives tinyattn's modules, so every
forward and backward the script runs is one of tinyattn's hand-derived ops. A torch name
tinyattn lacks stops the script with an error naming it and the line that used it.
ARGS are passed to the script as sys.argv[1:]. See docs/pytorch.md."""


def _banner(path: str) -> str:
    from .. import __version__    # noqa: PLC0415 - the package above is loaded
    return (f"[tinyattn {__version__}] running {path} on tinyattn: torch is mapped to "
            f"tinyattn's modules (python -m tinyattn run-torch)")


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _report(exc: BaseException) -> None:
    """Python's traceback from the script's first frame on, then where it stopped."""
    tb = exc.__traceback__
    while tb is not None and _is_internal(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)   # a SyntaxError shows its file and line
    last = None
    while tb is not None:
        if not _is_internal(tb.tb_frame.f_code.co_filename):
            last = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    if last is None and isinstance(exc, SyntaxError) and exc.filename:
        last = (exc.filename, exc.lineno or 0)
    where = f" at {describe_location(last)}" if last is not None else ""
    print(f"run-torch: the script stopped with {type(exc).__name__}{where} while running on "
          f"tinyattn{_hint(exc)}", file=sys.stderr)


def _hint(exc: BaseException) -> str:
    """A word on the one common case where torch's and tinyattn's objects differ in kind."""
    if isinstance(exc, AttributeError) and isinstance(getattr(exc, "obj", None), np.dtype):
        return (f": a tensor's .dtype is NumPy's in tinyattn, without torch.dtype's "
                f"{exc.name!r} (x.is_floating_point() and x.dtype.itemsize work)")
    return ""


def run_script(path: str, args: Sequence[str] = (), banner: bool = True) -> int:
    """Run the PyTorch script at ``path`` with ``args`` on tinyattn; return its exit status.
    ``sys.argv``, ``sys.path`` and the torch mapping are restored afterwards."""
    if not os.path.isfile(path):
        what = "a folder, not a script" if os.path.isdir(path) else "no such file"
        print(f"run-torch: {what}: {path}", file=sys.stderr)
        return 2
    saved_argv, saved_path = sys.argv, list(sys.path)
    if banner:
        print(_banner(path), file=sys.stderr, flush=True)
    install()
    backend.quiet_numpy_warnings()
    try:
        sys.argv = [path, *args]
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        runpy.run_path(path, run_name="__main__")
        return 0
    except SystemExit as exc:
        return _exit_code(exc)
    except MissingTorchFeature as exc:
        print(exc, file=sys.stderr)
        return 1
    except BrokenPipeError:       # `... | head`: the command line ends quietly (cli.py)
        raise
    except KeyboardInterrupt:
        print("run-torch: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the script's own error: report it as Python would
        _report(exc)
        return 1
    finally:
        sys.stdout.flush()
        sys.argv, sys.path[:] = saved_argv, saved_path
        uninstall()


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    return run_script(argv[0], argv[1:])
