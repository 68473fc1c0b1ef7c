"""The conformance harness runs torch on one thread: its inputs are small, and on a shared
2-core machine running two test workers, more threads only wait for each other."""
import pytest


@pytest.fixture(autouse=True, scope="module")
def _torch_on_one_thread():
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
