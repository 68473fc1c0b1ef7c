"""Exercise 29, conv2d: the backward of a 2-D convolution, for the input and the weight.

Task
    Fill in conv2d_backward: given grad (N, O, H_out, W_out) and the cache (x, weight,
    stride, padding, dilation), return (dx, dweight, dbias).

Shapes
    x (N, C, H, W), weight (O, C, KH, KW), bias (O,) -> out (N, O, H_out, W_out), as
    PyTorch's F.conv2d (no groups). stride, padding, dilation are pairs in the cache.
    The checker uses strides, padding, dilation and a kernel that is not square.

Hints (read docs/derivations.md#convolution)
    1. The forward is a sum over kernel taps (kh, kw): each tap is a linear layer over the
       channels applied to one strided slice of xpad (see taps()). Differentiate one tap.
    2. dweight[:, :, kh, kw] pairs grad with the slice that tap read; dbias sums grad over
       everything but the channel.
    3. dx: send grad back through each tap's weights INTO THE SAME SLICE of a zero dxpad
       (+=: overlapping windows add up), then crop the padding. No explicit flip is needed;
       if you derive it as a full correlation instead, mind which side the kernel is flipped.

Check
    python -m tinyattn.exercises check conv2d --path <your folder>
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
    # Your code here (delete the raise).
    raise NotImplementedError("conv2d_backward")
