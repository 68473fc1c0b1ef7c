"""``tinyattn.nn.init``: PyTorch's weight initialisers (docs/nn.md#nninit).

Each function fills a tensor in place without recording a gradient (so it works on a
``Parameter``), draws from the default generator (``tinyattn.manual_seed``) or from
``generator``, and returns the tensor, as ``torch.nn.init`` does:

    nn.init.xavier_uniform_(layer.weight)     # U(-a, a), a = gain sqrt(6 / (fan_in + fan_out))
    nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")    # N(0, 2 / fan_in)
    model.apply(lambda m: nn.init.zeros_(m.bias) if isinstance(m, nn.Linear) else None)

fan_in and fan_out (``_calculate_fan_in_and_fan_out``) follow PyTorch's convention for a
weight of shape (out, in, *kernel): fan_in = in * prod(kernel), fan_out = out * prod(kernel).
The same numbers as PyTorch's distributions, not the same draws (another generator).
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Optional, Tuple

import numpy as np

from .. import backend
from ..autograd import no_grad
from ..tensor import Tensor, tensor as make_tensor
from ..precision import is_floating

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "trunc_normal_", "orthogonal_", "sparse_", "dirac_", "uniform", "normal", "constant",
           "eye",
           "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal",
           "sparse", "dirac"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param: Optional[float] = None) -> float:
    """The factor that keeps activations' variance steady through ``nonlinearity``:
    1 for linear and sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for
    leaky_relu (slope ``param``, default 0.01), 3/4 for selu (PyTorch's table)."""
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}; use one of "
                     f"{sorted(_LINEAR + ('tanh', 'relu', 'leaky_relu', 'selu'))}")


def _checked(t: Any, name: str) -> bool:
    """Raise unless ``t`` is a floating Tensor; False (with PyTorch's warning) when empty."""
    if not isinstance(t, Tensor):
        raise TypeError(f"nn.init.{name} fills a Tensor in place, got {type(t).__name__}")
    if not is_floating(t.dtype):
        raise TypeError(f"nn.init.{name} fills floating-point tensors, got {t.dtype}")
    if t.numel() == 0:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return False
    return True


def _calculate_fan_in_and_fan_out(t: Tensor) -> Tuple[int, int]:
    if not isinstance(t, Tensor):
        raise TypeError(f"nn.init: expected a Tensor, got {type(t).__name__}")
    if t.ndim < 2:
        raise ValueError(f"fan in and fan out can not be computed for a tensor with fewer than "
                         f"2 dimensions (got shape {t.shape}); use normal_/uniform_ for biases")
    receptive = math.prod(t.shape[2:])
    return t.shape[1] * receptive, t.shape[0] * receptive


def _fan(t: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode {mode!r} not supported, please use one of 'fan_in', 'fan_out'")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with U(a, b)."""
    if _checked(tensor, "uniform_"):
        with no_grad():
            tensor.uniform_(a, b, generator=generator)
    return tensor


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Any = None) -> Tensor:
    """Fill with N(mean, std^2)."""
    if _checked(tensor, "normal_"):
        with no_grad():
            tensor.normal_(mean, std, generator=generator)
    return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    if _checked(tensor, "constant_"):
        with no_grad():
            tensor.fill_(val)
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (ones on the diagonal of a 2-D tensor, also when not square)."""
    if isinstance(tensor, Tensor) and tensor.ndim != 2:
        raise ValueError(f"eye_: only 2-D tensors are supported, got shape {tensor.shape}")
    if _checked(tensor, "eye_"):
        xp = backend.array_module_for(tensor.device)
        with no_grad():
            tensor.copy_(make_tensor(xp.eye(*tensor.shape, dtype=tensor.dtype)))
    return tensor


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot and Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """U(-bound, bound), bound = gain * sqrt(3 / fan) with gain = calculate_gain(nonlinearity,
    a) (He et al., 2015). PyTorch's defaults (a=0, leaky_relu) give gain sqrt(2)."""
    if isinstance(tensor, Tensor) and tensor.numel() == 0:
        return uniform_(tensor)                       # PyTorch's warning, nothing drawn
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """N(0, std^2), std = calculate_gain(nonlinearity, a) / sqrt(fan)."""
    if isinstance(tensor, Tensor) and tensor.numel() == 0:
        return normal_(tensor)
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Any = None) -> Tensor:
    """N(mean, std^2) truncated to [a, b] (absolute bounds, as PyTorch's), by inverse-CDF
    sampling: u ~ U(Phi(alpha), Phi(beta)), x = mean + std * Phi^-1(u). The draws are made on
    the host from the CPU generator (or a NumPy ``generator``), then copied to the device."""
    if not a < b:
        raise ValueError(f"trunc_normal_: the bounds must satisfy a < b, got a={a}, b={b}")
    if not std > 0:
        raise ValueError(f"trunc_normal_: std must be > 0, got {std}")
    if not _checked(tensor, "trunc_normal_"):
        return tensor
    low = (1.0 + math.erf((a - mean) / std / math.sqrt(2.0))) / 2.0     # Phi(alpha)
    high = (1.0 + math.erf((b - mean) / std / math.sqrt(2.0))) / 2.0    # Phi(beta)
    u = backend.uniform(tensor.shape, "cpu", np.float64, generator)
    erfinv = backend._scipy_special().erfinv                           # Phi^-1 = sqrt2 erfinv
    values = erfinv((2 * low - 1) + u * 2 * (high - low))
    values = np.clip(mean + std * math.sqrt(2.0) * values, a, b)
    with no_grad():
        tensor.copy_(make_tensor(values.astype(tensor.dtype), device=tensor.device))
    return tensor


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix (Saxe et al., 2013): the Q of a QR decomposition of a
    normal matrix, signs fixed so it is uniformly distributed; dims after the first are
    flattened. Computed on the host, then copied to the device."""
    if isinstance(tensor, Tensor) and tensor.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors with 2 or more dimensions are supported, "
                         f"got shape {tensor.shape}")
    if not _checked(tensor, "orthogonal_"):
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = backend.standard_normal((rows, cols), "cpu", np.float64, generator)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))                          # make the distribution uniform
    if rows < cols:
        q = q.T
    values = (gain * q).reshape(tensor.shape).astype(tensor.dtype)
    with no_grad():
        tensor.copy_(make_tensor(values, device=tensor.device))
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01,
            generator: Any = None) -> Tensor:
    """A sparse 2-D matrix (Martens, 2010): N(0, std^2) entries, then in each column
    ceil(sparsity * rows) entries, at rows drawn without replacement, set to zero."""
    if isinstance(tensor, Tensor) and tensor.ndim != 2:
        raise ValueError(f"sparse_: only tensors with 2 dimensions are supported, got shape "
                         f"{tensor.shape}")
    rows, cols = tensor.shape if isinstance(tensor, Tensor) else (0, 0)
    if not _checked(tensor, "sparse_"):
        return tensor
    zeros_per_column = int(math.ceil(sparsity * rows))
    values = std * backend.standard_normal((rows, cols), "cpu", np.float64, generator)
    order = np.argsort(backend.uniform((rows, cols), "cpu", np.float64, generator), axis=0)
    np.put_along_axis(values, order[:zeros_per_column], 0.0, axis=0)   # a random subset
    with no_grad():
        tensor.copy_(make_tensor(values.astype(tensor.dtype), device=tensor.device))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The identity convolution: a (out, in, *kernel) weight of zeros with a 1 at the centre
    of the kernel for each pair (g * out_per_group + d, d), d < min(out_per_group, in), so a
    convolution keeps as many of the input's channels as it can (in each of ``groups``)."""
    if isinstance(tensor, Tensor) and tensor.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_: only tensors with 3, 4, or 5 dimensions are supported, got "
                         f"shape {tensor.shape}")
    if isinstance(tensor, Tensor) and tensor.shape[0] % groups != 0:
        raise ValueError(f"dirac_: dim 0 must be divisible by groups, got shape "
                         f"{tensor.shape} and groups={groups}")
    if not _checked(tensor, "dirac_"):
        return tensor
    out_per_group = tensor.shape[0] // groups
    values = np.zeros(tensor.shape, dtype=tensor.dtype)
    centre = tuple(k // 2 for k in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, tensor.shape[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    with no_grad():
        tensor.copy_(make_tensor(values, device=tensor.device))
    return tensor


def _deprecated(name: str) -> Any:
    """torch's underscore-less initialisers (still in tutorials): torch's FutureWarning, then
    the in-place one."""
    current = globals()[name + "_"]

    def legacy(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`.",
                      FutureWarning, stacklevel=2)
        return current(*args, **kwargs)
    legacy.__name__ = legacy.__qualname__ = name
    legacy.__doc__ = f"Deprecated (torch's too): use ``{name}_``."
    return legacy


uniform, normal, constant, eye = (_deprecated(n) for n in ("uniform", "normal", "constant",
                                                           "eye"))
xavier_uniform, xavier_normal = _deprecated("xavier_uniform"), _deprecated("xavier_normal")
kaiming_uniform, kaiming_normal = _deprecated("kaiming_uniform"), _deprecated("kaiming_normal")
orthogonal = _deprecated("orthogonal")
sparse, dirac = _deprecated("sparse"), _deprecated("dirac")
