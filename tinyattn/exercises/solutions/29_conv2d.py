"""Exercise 29, conv2d: reference solution for conv2d_backward.

Derivation (docs/derivations.md#convolution)
    out[n, o, i, j] = b[o] + sum_{c, kh, kw} w[o, c, kh, kw] xpad[n, c, i sh + kh dh,
    j sw + kw dw]. Each kernel tap (kh, kw) is a linear layer over the channels, applied to
    the strided slice of xpad it reads (taps()): out += xpad[slice] . w[:, :, kh, kw].
    So, tap by tap, as for Linear:
        dw[o, c, kh, kw] = sum_{n, i, j} g[n, o, i, j] xpad[n, c, slice]   (the same slice)
        dxpad[n, c, slice] += sum_o g[n, o, i, j] w[o, c, kh, kw]          (added back where
                                                                            it was read)
        db[o] = sum_{n, i, j} g[n, o, i, j],   dx = dxpad with the padding cropped.
    Written per pixel, dx is a correlation of g (with sh - 1 zeros between its entries) with
    the kernel FLIPPED; here the flip is implicit: each tap sends g back to the slice it
    read. The classic mistakes: the flip on the wrong side, the stride (or the dilation)
    forgotten in the backward's slices, the padding left on dx.
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


def conv2d_forward(x, weight, bias, stride=1, padding=0, dilation=1):
    """PyTorch's F.conv2d without groups (a cross-correlation: the kernel is not flipped):
    out[n, o, i, j] = bias[o] + sum over c, kh, kw of
                      weight[o, c, kh, kw] * xpad[n, c, i * sh + kh * dh, j * sw + kw * dw],
    xpad = x with `padding` zeros on each side. x (N, C, H, W), weight (O, C, KH, KW),
    bias (O,) -> (N, O, H_out, W_out). Given; do not change."""
    stride, padding, dilation = pair(stride), pair(padding), pair(dilation)
    (ph, pw), (kh_size, kw_size) = padding, weight.shape[2:]
    xpad = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    h_out = (xpad.shape[2] - dilation[0] * (kh_size - 1) - 1) // stride[0] + 1
    w_out = (xpad.shape[3] - dilation[1] * (kw_size - 1) - 1) // stride[1] + 1
    out = np.zeros((x.shape[0], weight.shape[0], h_out, w_out)) + bias[:, None, None]
    for kh in range(kh_size):
        for kw in range(kw_size):
            rows, cols = taps(kh, kw, (h_out, w_out), stride, dilation)
            out += np.einsum("nchw,oc->nohw", xpad[:, :, rows, cols], weight[:, :, kh, kw])
    return out, (x, weight, stride, padding, dilation)


def conv2d_backward(grad, cache):
    """Return (dx, dweight, dbias), of the shapes of x, weight and bias."""
    x, weight, stride, padding, dilation = cache
    (ph, pw), out_hw = padding, grad.shape[2:]
    xpad = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    dxpad, dweight = np.zeros_like(xpad), np.zeros_like(weight)
    for kh in range(weight.shape[2]):
        for kw in range(weight.shape[3]):
            rows, cols = taps(kh, kw, out_hw, stride, dilation)
            dweight[:, :, kh, kw] = np.einsum("nohw,nchw->oc", grad, xpad[:, :, rows, cols])
            dxpad[:, :, rows, cols] += np.einsum("nohw,oc->nchw", grad, weight[:, :, kh, kw])
    dx = dxpad[:, :, ph:ph + x.shape[2], pw:pw + x.shape[3]]
    return dx, dweight, grad.sum(axis=(0, 2, 3))
