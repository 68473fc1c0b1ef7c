"""A tensor hook that returns its gradient on another device is refused with both devices
named, as assigning .grad is; before, the CPU array reached NumPy ufuncs deep in the
backward ("NumPy ufunc multiply called on strict-device data")."""
import numpy as np
import pytest

import tinyattn as ta
from tinyattn import strict_device

strict_device.enable()
DEVICE = strict_device.DEVICE


def test_a_hook_returning_a_cpu_gradient_names_both_devices():
    x = ta.tensor(np.ones(3), dtype="float64", device=DEVICE, requires_grad=True)
    y = x * 2.0
    y.register_hook(lambda grad: grad.cpu())
    with pytest.raises(RuntimeError) as info:
        (y * y).sum().backward()
    message = str(info.value)
    assert "cpu" in message and DEVICE in message


def test_a_hook_on_the_same_device_is_used():
    """Control: a hook that keeps the device changes the gradient."""
    x = ta.tensor(np.ones(3), dtype="float64", device=DEVICE, requires_grad=True)
    y = x * 2.0
    y.register_hook(lambda grad: grad * 10.0)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [20.0, 20.0, 20.0])
