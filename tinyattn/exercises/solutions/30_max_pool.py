"""Exercise 30, max pooling: reference solution for max_pool2d_backward.

Derivation (docs/derivations.md#pooling)
    out_i = max over window i of xpad. The max is one of its arguments, so d out_i / d x_j
    is 1 for the window's winner j*(i) and 0 for the rest: the gradient is ROUTED,
        dx_j = sum over the windows i whose winner is j of g_i,
    summed when overlapping windows (stride < kernel) pick the same element. Ties: the max
    is not differentiable there; PyTorch gives all of g_i to the FIRST maximum of the window
    in row-major order (kh, then kw), which is what F.max_pool2d(return_indices=True)
    returns. Here: walk the taps in that order, each window taking the first tap that holds
    its maximum (`taken` remembers which windows are served), add g there into dxpad, crop
    the padding. The classic mistakes: every tied maximum (or the last) gets g; the stride
    or dilation forgotten (g lands in the wrong window); dx[idx] = g, which keeps one of
    two overlapping windows' gradients instead of adding them.
"""
import itertools

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
    (ph, pw), out_hw = padding, out.shape[2:]
    xpad = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=-np.inf)
    dxpad = np.zeros_like(xpad)
    taken = np.zeros(out.shape, dtype=bool)     # windows whose first maximum is found
    for kh, kw in itertools.product(range(kernel[0]), range(kernel[1])):
        rows, cols = taps(kh, kw, out_hw, stride, dilation)
        first = (xpad[:, :, rows, cols] == out) & ~taken
        dxpad[:, :, rows, cols] += np.where(first, grad, 0.0)
        taken |= first
    return dxpad[:, :, ph:ph + x.shape[2], pw:pw + x.shape[3]]
