"""Shared test settings: hypothesis profile sized for a 2-core CI machine."""
from hypothesis import settings

settings.register_profile("tinyattn", max_examples=25, deadline=None)
settings.load_profile("tinyattn")
