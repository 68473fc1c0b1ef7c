"""Shared test settings: hypothesis profile sized for a 2-core CI machine."""
from hypothesis import settings

settings.register_profile("tinyattn", max_examples=25, deadline=None)
settings.load_profile("tinyattn")


def squash(text: str) -> str:
    """``text`` with every run of whitespace made one space: compare messages with this, so a
    test does not depend on where a message wraps (path length, user name, terminal width)."""
    return " ".join(str(text).split())
