"""The command line: ``python -m tinyattn gradcheck`` (and the other commands).

The top of the layers (docs/architecture.md): each command's module is imported when that
command runs, so ``gradcheck`` does not load training or the pretrained models. The helpers
every command shares (``quiet_on_broken_pipe``, ``int_at_least``) live in console.py, below
everything, so the commands' own modules never import this one."""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import List, Optional

import numpy as np

from .console import SIGPIPE_EXIT, int_at_least, quiet_on_broken_pipe
from .gradcheck import gradcheck_report
from .optable import OP_TABLE, make_inputs

__all__ = ["main", "run_gradcheck_table", "quiet_on_broken_pipe", "int_at_least", "SIGPIPE_EXIT"]

def run_gradcheck_table(names: Optional[List[str]] = None, fast: bool = False,
                        seed: int = 0) -> int:
    """Gradcheck every op of the table over its cases; print a table; return the failures."""
    rng = np.random.default_rng(seed)
    specs = [s for s in OP_TABLE if not names or s.name in names]
    unknown = set(names or []) - {s.name for s in OP_TABLE}
    if unknown:
        print(f"unknown op(s): {', '.join(sorted(unknown))}; "
              f"known: {', '.join(s.name for s in OP_TABLE)}")
        return 1
    cases = [(spec, list(spec.cases(rng))) for spec in specs]
    width = min(max([len(c.label) for _, cs in cases for c in cs] + [6]), 52)
    header = f"{'op':<22} {'shapes':<{width}} {'max abs err':>11} {'max rel err':>11}  result"
    print(header)
    print("-" * len(header))
    failures = 0
    start = time.perf_counter()
    for spec, spec_cases in cases:
        for case in spec_cases:
            report = gradcheck_report(spec.fn, make_inputs(case), fast=fast)
            status = "PASS" if report.passed else "FAIL"
            failures += not report.passed
            label = textwrap.wrap(case.label, width, break_long_words=False) or [""]
            print(f"{spec.name:<22} {label[0]:<{width}} {report.max_abs_error:>11.2e} "
                  f"{report.max_rel_error:>11.2e}  {status}")
            for more in label[1:]:          # a long label goes on, whole words, below
                print(f"{'':<22} {more}")
            if not report.passed:
                print("    " + str(report).replace("\n", "\n    "))
    elapsed = time.perf_counter() - start
    print(f"\n{failures} failed; {len(specs)} ops checked in float64 in {elapsed:.1f} s "
          f"(docs/derivations.md explains each backward)")
    return failures


_non_negative_int = int_at_least(0)

LEARN_EXTRA = 'python3 -m pip install -e ".[learn]"'


def open_learning_path(print_only: bool = False) -> int:
    """``python -m tinyattn learn``: JupyterLab on examples/notebooks/, the first notebook
    open (docs/learn.md). Says what to install when JupyterLab is missing, and where the
    notebooks are when this is not a clone."""
    folder = Path(__file__).resolve().parent.parent / "examples" / "notebooks"
    first = sorted(folder.glob("01_*.ipynb"))
    if not first:
        print(f"error: no notebooks in {folder}: the learning path's notebooks come with a "
              f"clone of the repository (then {LEARN_EXTRA} in it)", file=sys.stderr)
        return 2
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}",
               str(first[0])]
    if hasattr(os, "geteuid") and os.geteuid() == 0:      # a container: Jupyter refuses root
        command.insert(3, "--allow-root")
    if print_only:
        print(" ".join(command))
        return 0
    if importlib.util.find_spec("jupyterlab") is None:
        print(f"error: JupyterLab is not installed; install it with the learn extra:\n"
              f"    {LEARN_EXTRA}\nthen run python3 -m tinyattn learn again. (To read the "
              f"notebooks with their pictures without installing anything: docs/notebooks/ "
              f"in the repository.)", file=sys.stderr)
        return 2
    print(f"opening {first[0].name} in JupyterLab (the notebooks: {folder}); stop it with "
          f"Ctrl-C")
    try:
        return subprocess.call(command, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (str(folder.parent.parent), os.environ.get("PYTHONPATH", "")) if p)))
    except KeyboardInterrupt:
        return 130


def main(argv: Optional[List[str]] = None) -> int:
    return quiet_on_broken_pipe(lambda: _main(argv))


def _main(argv: Optional[List[str]]) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run-torch"]:   # everything after it is the script's, passed verbatim
        from .torch_shim import main as run_torch_main  # noqa: PLC0415 - on demand
        return run_torch_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m tinyattn",
                                     description="tinyattn command line")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("gradcheck", help="finite-difference check of every op's backward")
    check.add_argument("ops", nargs="*", help="op names (default: all)")
    check.add_argument("--fast", action="store_true",
                       help="random-projection check instead of the full Jacobian")
    check.add_argument("--seed", type=_non_negative_int, default=0,
                       help="seed of the random inputs (a whole number >= 0), default 0")
    sub.add_parser("train", help="the toy training script (see --help)", add_help=False)
    sub.add_parser("doctor", help="check the GPU setup", add_help=False)
    sub.add_parser("sample", help="generate with a trained checkpoint (see --help)",
                   add_help=False)
    sub.add_parser("embed", help="sentence embeddings from a real model", add_help=False)
    sub.add_parser("attention", help="plot a real model's attention heads", add_help=False)
    sub.add_parser("generate", help="continue a prompt with a GPT-2 checkpoint",
                   add_help=False)
    sub.add_parser("run-torch", help="run a PyTorch script on tinyattn (see run-torch --help)",
                   add_help=False)
    sub.add_parser("explore", help="write a page to click through a graph and its backward",
                   add_help=False)
    learn = sub.add_parser("learn", help="open the learning path's notebooks in JupyterLab")
    learn.add_argument("--print-command", action="store_true",
                       help="print the command that would open them, and exit")
    args, rest = parser.parse_known_args(argv)
    if args.command == "gradcheck":
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        return 1 if run_gradcheck_table(args.ops, fast=args.fast, seed=args.seed) else 0
    if args.command == "train":
        from .train.cli import main as train_main  # noqa: PLC0415 - on demand
        return train_main(rest)
    if args.command == "doctor":
        from .doctor import main as doctor_main  # noqa: PLC0415
        return doctor_main(rest)
    if args.command == "sample":
        from .train.sample import main as sample_main  # noqa: PLC0415 - on demand
        return sample_main(rest)
    if args.command in ("embed", "attention"):
        from .models import cli as models_cli  # noqa: PLC0415 - on demand
        return getattr(models_cli, f"{args.command}_main")(rest)
    if args.command == "explore":
        from .train.explore_cli import main as explore_main  # noqa: PLC0415 - on demand
        return explore_main(rest)
    if args.command == "learn":
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        return open_learning_path(args.print_command)
    if args.command == "generate":
        from .models.generate_cli import generate_main  # noqa: PLC0415 - on demand
        return generate_main(rest)
    return 2
