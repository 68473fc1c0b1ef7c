"""Shared test settings: hypothesis profile sized for a 2-core CI machine."""
from hypothesis import settings

settings.register_profile("tinyattn", max_examples=25, deadline=None)
settings.load_profile("tinyattn")


def squash(text: str) -> str:
    """``text`` with every run of whitespace made one space: compare messages with this, so a
    test does not depend on where a message wraps (path length, user name, terminal width)."""
    return " ".join(str(text).split())


def pytest_terminal_summary(terminalreporter):
    """The conformance run's summary: cases that agree, and each skip-table reason with how
    many cases it covered (tests/conformance/summary.py)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from conformance.summary import write_summary
    finally:
        sys.path.pop(0)
    write_summary(terminalreporter)
