"""Exercise 30, max pooling: route the gradient to each window's maximum, ties as torch.

Task
    Fill in max_pool2d_backward: given grad (N, C, H_out, W_out) and the cache (x, out,
    kernel, stride, padding, dilation), return dx of shape (N, C, H, W).

Shapes
    x (N, C, H, W) -> out (N, C, H_out, W_out), as PyTorch's F.max_pool2d. kernel, stride,
    padding, dilation are pairs in the cache. The checker uses overlapping windows, padding,
    dilation, and inputs with TIED maxima in a window.

Hints (read docs/derivations.md#pooling)
    1. out_i is one element of its window, so d out_i / d x_j is 1 for that element and 0
       for the rest: grad is routed, not spread.
    2. Overlapping windows can pick the same element: its gradient is the SUM of theirs
       (d = np.zeros(3); d[[0, 0]] = 1.0 keeps one, np.add.at adds both).
    3. Ties: when several elements of a window equal its maximum, PyTorch gives all of g to
       the FIRST one in row-major order (the smallest kh, then the smallest kw): the index
       F.max_pool2d(..., return_indices=True) returns. Exactly one element per window.
    4. taps() gives, for kernel tap (kh, kw), the slice of xpad that tap reads.

Check
    python -m tinyattn.exercises check max_pool --path <your folder>
"""
import numpy as np


def pair(value):
    """An int or a pair -> a pair: 2 -> (2, 2), (2, 1) -> (2, 1). Given."""
    return (value, value) if isinstance(value, (int, np.integer)) else tuple(value)


def taps(kh, kw, out_hw, stride, dilation):
    """The slices of the padded input that kernel tap (kh, kw) reads, one element per output
    pixel: xpad[:, :, rows, cols] is (N, C, H_out, W_out), its element [n, c, i, j] being
    xpad[n, c, i * sh + kh * dh, j * sw + kw * dw]. Given; use it in your backward too."""
    (sh, sw), (dh, dw), (h_out, w_out) = stride, dilation, out_hw
    rows = slice(kh * dh, kh * dh + sh * (h_out - 1) + 1, sh)
    cols = slice(kw * dw, kw * dw + sw * (w_out - 1) + 1, sw)
    return rows, cols
    rows = slice(kh * dh, kh * dh + sh * (h_out - 1) + 1, sh)


def max_pool2d_forward(x, kernel_size, stride=None, padding=0, dilation=1):
    """PyTorch's F.max_pool2d (ceil_mode=False): out[n, c, i, j] = the maximum of the window
    xpad[n, c, i * sh + kh * dh, j * sw + kw * dw] over the kernel taps (kh, kw), xpad = x
    with `padding` -inf on each side (it never wins). stride defaults to kernel_size.
    x (N, C, H, W) -> (N, C, H_out, W_out). Given; do not change."""
    kernel = pair(kernel_size)
    stride = kernel if stride is None else pair(stride)
    padding, dilation = pair(padding), pair(dilation)
    (ph, pw) = padding
    xpad = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=-np.inf)
    h_out = (xpad.shape[2] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    w_out = (xpad.shape[3] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    out = np.full(x.shape[:2] + (h_out, w_out), -np.inf)
    for kh in range(kernel[0]):
        for kw in range(kernel[1]):
            rows, cols = taps(kh, kw, (h_out, w_out), stride, dilation)
            out = np.maximum(out, xpad[:, :, rows, cols])
    return out, (x, out, kernel, stride, padding, dilation)


def max_pool2d_backward(grad, cache):
    """Return dx, of x's shape (N, C, H, W)."""
    x, out, kernel, stride, padding, dilation = cache
    # Your code here (delete the raise).
    raise NotImplementedError("max_pool2d_backward")
