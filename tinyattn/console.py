"""What every tinyattn command line shares: argparse types and quiet exits on a closed pipe.

Standard library only, at the bottom of the layers (docs/architecture.md), so the commands in
train/, models/ and exercises/ use it without importing tinyattn/cli.py, which imports them.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

__all__ = ["quiet_on_broken_pipe", "int_at_least", "SIGPIPE_EXIT"]

SIGPIPE_EXIT = 141  # 128 + SIGPIPE: what a shell reports for `yes | head`


def quiet_on_broken_pipe(command: Callable[[], int]) -> int:
    """Run ``command``; if its reader went away (``... | head``), stop without a traceback,
    as Unix tools do, and return 141. Later writes (Python's own flush at exit) go to
    /dev/null so they cannot fail either."""
    try:
        code = command()
        sys.stdout.flush()      # buffered output meets the closed pipe here, not at exit
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return SIGPIPE_EXIT


def int_at_least(low: int):
    """An argparse type: a whole number >= low, with a message that says so (shared by every
    tinyattn command)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") \
                from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value
    return parse
