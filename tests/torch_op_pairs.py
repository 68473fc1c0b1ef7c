"""tinyattn calls and their torch twins, one per op, with input specs: the table that
tests/test_amp_autocast.py runs inside both frameworks' autocast and tests/test_half_precision.py
runs in half precision. Importing it needs torch (the callers skip without it)."""
from __future__ import annotations

import numpy as np
import torch

import tinyattn as ta
import tinyattn.functional as F

tF = torch.nn.functional

# inputs: ("f", shape) float32, ("h", shape) in the autocast dtype, ("i", shape, high) int64,
# ("m", shape) bool, ("p", shape) in (0, 1), ("pos", shape) positive float32
OPS = {
    "add": (lambda a, b: a + b, lambda a, b: a + b, [("f", (3, 4)), ("f", (4,))]),
    "add_mixed": (lambda a, b: a + b, lambda a, b: a + b, [("h", (3, 4)), ("f", (4,))]),
    "sub": (lambda a, b: a - b, lambda a, b: a - b, [("f", (3, 4)), ("h", (3, 4))]),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, [("h", (3, 4)), ("h", (3, 4))]),
    "div": (lambda a, b: a / b, lambda a, b: a / b, [("f", (3, 4)), ("pos", (3, 4))]),
    "neg": (lambda x: -x, lambda x: -x, [("h", (3,))]),
    "pow": (lambda x: x ** 2, lambda x: x ** 2, [("h", (3,))]),
    "pow_tensor": (lambda x, y: x ** y, lambda x, y: x ** y, [("pos", (3,)), ("h", (3,))]),
    "rpow": (lambda x: 2.5 ** x, lambda x: 2.5 ** x, [("h", (3,))]),
    "exp": (ta.exp, torch.exp, [("h", (3,))]),
    "log": (ta.log, torch.log, [("pos", (3,))]),
    "log_half": (ta.log, torch.log, [("h", (3,))]),
    "log2": (ta.log2, torch.log2, [("h", (3,))]),
    "sqrt": (ta.sqrt, torch.sqrt, [("pos", (3,))]),
    "tanh": (ta.tanh, torch.tanh, [("h", (3,))]),
    "relu": (F.relu, tF.relu, [("h", (3,))]),
    "gelu": (F.gelu, tF.gelu, [("f", (3,))]),
    "clone": (ta.clone, torch.clone, [("h", (3,))]),
    "clamp": (lambda x: x.clamp(-1, 1), lambda x: x.clamp(-1, 1), [("h", (3,))]),
    "to": (lambda x: x.to("float64"), lambda x: x.to(torch.float64), [("h", (3,))]),
    "reshape": (lambda x: x.reshape(6), lambda x: x.reshape(6), [("h", (2, 3))]),
    "permute": (lambda x: x.permute(1, 0), lambda x: x.permute(1, 0), [("h", (2, 3))]),
    "getitem": (lambda x: x[0], lambda x: x[0], [("h", (2, 3))]),
    "cat": (lambda a, b: ta.cat([a, b]), lambda a, b: torch.cat([a, b]),
            [("h", (2, 3)), ("f", (1, 3))]),
    "stack": (lambda a, b: ta.stack([a, b]), lambda a, b: torch.stack([a, b]),
              [("f", (3,)), ("h", (3,))]),
    "expand": (lambda x: x.expand(2, 3), lambda x: x.expand(2, 3), [("h", (1, 3))]),
    "repeat": (lambda x: x.repeat(2, 1), lambda x: x.repeat(2, 1), [("h", (1, 3))]),
    "flip": (lambda x: x.flip(0), lambda x: x.flip(0), [("h", (3,))]),
    "tril": (ta.tril, torch.tril, [("h", (3, 3))]),
    "sigmoid": (ta.sigmoid, torch.sigmoid, [("h", (3,))]),
    "abs": (ta.abs, torch.abs, [("h", (3,))]),
    "rsqrt": (ta.rsqrt, torch.rsqrt, [("h", (3,))]),
    "leaky_relu": (F.leaky_relu, tF.leaky_relu, [("h", (3,))]),
    "silu": (F.silu, tF.silu, [("h", (3,))]),
    "softplus": (F.softplus, tF.softplus, [("h", (3,))]),
    "sum": (lambda x: x.sum(), lambda x: x.sum(), [("h", (3, 4))]),
    "mean": (lambda x: x.mean(), lambda x: x.mean(), [("h", (3, 4))]),
    "amax": (lambda x: x.amax(0), lambda x: x.amax(0), [("h", (3, 4))]),
    "amin": (lambda x: x.amin(0), lambda x: x.amin(0), [("h", (3, 4))]),
    "prod": (lambda x: x.prod(), lambda x: x.prod(), [("h", (3,))]),
    "prod_f32": (lambda x: x.prod(), lambda x: x.prod(), [("f", (3,))]),
    "cumsum": (lambda x: x.cumsum(0), lambda x: x.cumsum(0), [("h", (3,))]),
    "cumprod": (lambda x: x.cumprod(0), lambda x: x.cumprod(0), [("h", (3,))]),
    "var": (lambda x: x.var(), lambda x: x.var(), [("h", (3, 4))]),
    "std": (lambda x: x.std(), lambda x: x.std(), [("h", (3, 4))]),
    "logsumexp": (lambda x: ta.logsumexp(x, 0), lambda x: torch.logsumexp(x, 0),
                  [("h", (3,))]),
    "norm": (lambda x: x.norm(), lambda x: x.norm(), [("h", (3,))]),
    "logsigmoid": (F.logsigmoid, tF.logsigmoid, [("h", (3,))]),
    "elu": (F.elu, tF.elu, [("h", (3,))]),
    "hardtanh": (F.hardtanh, tF.hardtanh, [("h", (3,))]),
    "softsign": (F.softsign, tF.softsign, [("h", (3,))]),
    "masked_fill": (lambda x, m: x.masked_fill(m, 0.5), lambda x, m: x.masked_fill(m, 0.5),
                    [("h", (3,)), ("m", (3,))]),
    "where": (lambda m, a, b: ta.where(m, a, b), lambda m, a, b: torch.where(m, a, b),
              [("m", (3,)), ("h", (3,)), ("f", (3,))]),
    "matmul": (ta.matmul, torch.matmul, [("f", (2, 3)), ("f", (3, 4))]),
    "matmul_f64": (ta.matmul, torch.matmul, [("d", (2, 3)), ("d", (3, 4))]),
    "mm": (ta.mm, torch.mm, [("f", (2, 3)), ("h", (3, 4))]),
    "bmm": (ta.bmm, torch.bmm, [("f", (2, 2, 3)), ("f", (2, 3, 4))]),
    "addmm": (ta.addmm, torch.addmm, [("f", (4,)), ("f", (2, 3)), ("f", (3, 4))]),
    "linear": (F.linear, tF.linear, [("f", (2, 3)), ("f", (4, 3)), ("f", (4,))]),
    "linear_no_bias": (F.linear, tF.linear, [("f", (2, 3)), ("f", (4, 3))]),
    "einsum": (lambda a, b: ta.einsum("ij,jk->ik", a, b),
               lambda a, b: torch.einsum("ij,jk->ik", a, b), [("f", (2, 3)), ("f", (3, 4))]),
    "dot": (ta.dot, torch.dot, [("f", (3,)), ("f", (3,))]),
    "mv": (ta.mv, torch.mv, [("f", (2, 3)), ("f", (3,))]),
    "outer": (ta.outer, torch.outer, [("f", (2,)), ("f", (3,))]),
    "softmax": (lambda x: F.softmax(x, -1), lambda x: tF.softmax(x, -1), [("h", (2, 3))]),
    "log_softmax": (lambda x: F.log_softmax(x, -1), lambda x: tF.log_softmax(x, -1),
                    [("h", (2, 3))]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (3,), w, b),
                   lambda x, w, b: tF.layer_norm(x, (3,), w, b),
                   [("h", (2, 3)), ("f", (3,)), ("f", (3,))]),
    "layer_norm_f32": (lambda x, w, b: F.layer_norm(x, (3,), w, b),
                       lambda x, w, b: tF.layer_norm(x, (3,), w, b),
                       [("f", (2, 3)), ("f", (3,)), ("f", (3,))]),
    "rms_norm": (lambda x, w: F.rms_norm(x, (3,), w), lambda x, w: tF.rms_norm(x, (3,), w),
                 [("h", (2, 3)), ("f", (3,))]),
    "batch_norm": (lambda x, m, v: F.batch_norm(x, m, v), lambda x, m, v: tF.batch_norm(x, m, v),
                   [("h", (4, 3)), ("r", (3,)), ("rpos", (3,))]),
    "embedding": (F.embedding, tF.embedding, [("i", (2, 3), 5), ("f", (5, 4))]),
    "cross_entropy": (F.cross_entropy, tF.cross_entropy, [("h", (4, 5)), ("i", (4,), 5)]),
    "cross_entropy_f32": (F.cross_entropy, tF.cross_entropy, [("f", (4, 5)), ("i", (4,), 5)]),
    "nll_loss": (F.nll_loss, tF.nll_loss, [("h", (4, 5)), ("i", (4,), 5)]),
    "mse_loss": (F.mse_loss, tF.mse_loss, [("h", (4,)), ("h", (4,))]),
    "l1_loss": (F.l1_loss, tF.l1_loss, [("h", (4,)), ("h", (4,))]),
    "smooth_l1_loss": (F.smooth_l1_loss, tF.smooth_l1_loss, [("h", (4,)), ("h", (4,))]),
    "huber_loss": (F.huber_loss, tF.huber_loss, [("h", (4,)), ("h", (4,))]),
    "kl_div": (lambda a, b: F.kl_div(a, b, reduction="batchmean"),
               lambda a, b: tF.kl_div(a, b, reduction="batchmean"),
               [("h", (2, 3)), ("p", (2, 3))]),
    "bce_with_logits": (F.binary_cross_entropy_with_logits,
                        tF.binary_cross_entropy_with_logits, [("h", (4,)), ("p", (4,))]),
    "bce": (F.binary_cross_entropy, tF.binary_cross_entropy, [("hp", (4,)), ("p", (4,))]),
    "sdpa": (F.scaled_dot_product_attention, tF.scaled_dot_product_attention,
             [("f", (1, 2, 3, 4)), ("f", (1, 2, 3, 4)), ("f", (1, 2, 3, 4))]),
    "sdpa_causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    lambda q, k, v: tF.scaled_dot_product_attention(q, k, v, is_causal=True),
                    [("f", (1, 3, 4)), ("h", (1, 3, 4)), ("f", (1, 3, 4))]),
    "dropout": (lambda x: F.dropout(x, 0.5), lambda x: tF.dropout(x, 0.5), [("h", (3,))]),
    "maximum": (ta.maximum, torch.maximum, [("h", (3,)), ("h", (3,))]),
    "minimum": (ta.minimum, torch.minimum, [("h", (3,)), ("h", (3,))]),
    "gather": (lambda x, i: ta.gather(x, 1, i), lambda x, i: torch.gather(x, 1, i),
               [("h", (2, 3)), ("i", (2, 2), 3)]),
    "scatter": (lambda x, i, s: ta.scatter(x, 0, i, s), lambda x, i, s: torch.scatter(x, 0, i, s),
                [("h", (3, 4)), ("distinct", (2, 4), 3), ("h", (2, 4))]),
    "scatter_add": (lambda x, i, s: ta.scatter_add(x, 0, i, s),
                    lambda x, i, s: torch.scatter_add(x, 0, i, s),
                    [("h", (3, 4)), ("i", (2, 4), 3), ("h", (2, 4))]),
    "index_add": (lambda x, i, s: ta.index_add(x, 0, i, s),
                  lambda x, i, s: torch.index_add(x, 0, i, s),
                  [("h", (3, 4)), ("i", (2,), 3), ("h", (2, 4))]),
    "pad": (lambda x: F.pad(x, (1, 1)), lambda x: tF.pad(x, (1, 1)), [("h", (2, 3))]),
    "roll": (lambda x: ta.roll(x, 1, 0), lambda x: torch.roll(x, 1, 0), [("h", (3,))]),
    "diagonal": (ta.diagonal, torch.diagonal, [("h", (3, 3))]),
    "as_strided": (lambda x: ta.as_strided(x, (2, 2), (1, 2)),
                   lambda x: torch.as_strided(x, (2, 2), (1, 2)), [("h", (3, 3))]),
    "diag": (lambda v: ta.diag(v, -1), lambda v: torch.diag(v, -1), [("h", (3,))]),
    "repeat_interleave": (lambda x: x.repeat_interleave(2), lambda x: x.repeat_interleave(2),
                          [("h", (3,))]),
    "repeat_interleave_counts": (lambda x: x.repeat_interleave(ta.tensor([2, 0, 1])),
                                 lambda x: x.repeat_interleave(torch.tensor([2, 0, 1])),
                                 [("h", (3,))]),
    "remainder": (lambda a, b: a % b, lambda a, b: a % b, [("h", (3,)), ("pos", (3,))]),
    "fmod": (ta.fmod, torch.fmod, [("h", (3,)), ("h", (3,))]),
    "floor_divide": (ta.floor_divide, torch.floor_divide, [("h", (3,)), ("hpos", (3,))]),
    "div_trunc": (lambda a, b: ta.div(a, b, rounding_mode="trunc"),
                  lambda a, b: torch.div(a, b, rounding_mode="trunc"),
                  [("h", (3,)), ("hpos", (3,))]),
    "clamp_tensor": (lambda x, lo, hi: ta.clamp(x, min=lo, max=hi + 1),
                     lambda x, lo, hi: torch.clamp(x, min=lo, max=hi + 1),
                     [("h", (3,)), ("h", (3,)), ("h", (3,))]),
    "square": (ta.square, torch.square, [("h", (3,))]),
    "reciprocal": (ta.reciprocal, torch.reciprocal, [("h", (3,))]),
    "log1p": (ta.log1p, torch.log1p, [("hp", (3,))]),
    "expm1": (ta.expm1, torch.expm1, [("h", (3,))]),
    "floor": (ta.floor, torch.floor, [("h", (3,))]),
    "nan_to_num": (ta.nan_to_num, torch.nan_to_num, [("h", (3,))]),
    "sin": (ta.sin, torch.sin, [("h", (3,))]),
    "cos": (ta.cos, torch.cos, [("h", (3,))]),
    "lerp": (lambda a, b: ta.lerp(a, b, 0.3), lambda a, b: torch.lerp(a, b, 0.3),
             [("h", (3,)), ("h", (3,))]),
    "normalize": (F.normalize, tF.normalize, [("h", (2, 3))]),
    "cosine_similarity": (F.cosine_similarity, tF.cosine_similarity,
                          [("h", (2, 3)), ("h", (2, 3))]),
    "setitem": (lambda x, v: _setitem(x, v), lambda x, v: _setitem(x, v),
                [("h", (3,)), ("f", ())]),
    "setitem_view": (lambda x, v: _setitem_view(x, v), lambda x, v: _setitem_view(x, v),
                     [("h", (2, 3)), ("h", ())]),
    "sinh": (ta.sinh, torch.sinh, [("h", (3,))]),
    "cosh": (ta.cosh, torch.cosh, [("h", (3,))]),
    "tan": (ta.tan, torch.tan, [("h", (3,))]),
    "asin": (ta.asin, torch.asin, [("hp", (3,))]),
    "acos": (ta.acos, torch.acos, [("hp", (3,))]),
    "atan": (ta.atan, torch.atan, [("h", (3,))]),
    "atan2": (ta.atan2, torch.atan2, [("h", (3,)), ("h", (3,))]),
    "exp2": (ta.exp2, torch.exp2, [("h", (3,))]),
    "pad_reflect": (lambda x: F.pad(x, (1, 1), mode="reflect"),
                    lambda x: tF.pad(x, (1, 1), mode="reflect"), [("h", (2, 3))]),
    "scatter_reduce": (lambda x, i, s: ta.scatter_reduce(x, 0, i, s, "sum"),
                       lambda x, i, s: torch.scatter_reduce(x, 0, i, s, "sum"),
                       [("h", (3, 4)), ("i", (2, 4), 3), ("h", (2, 4))]),
    "scatter_value_add": (lambda x, i: x.scatter(0, i, value=1.5, reduce="add"),
                          lambda x, i: x.scatter(0, i, value=1.5, reduce="add"),
                          [("h", (3, 4)), ("i", (2, 4), 3)]),
    "normal": (lambda m, sd: ta.normal(m, sd), lambda m, sd: torch.normal(m, sd),
               [("h", (3,)), ("hpos", (3,))]),
    # convolution and pooling (issue 36)
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, padding=1),
               lambda x, w, b: tF.conv2d(x, w, b, padding=1),
               [("f", (1, 2, 5, 5)), ("f", (3, 2, 3, 3)), ("f", (3,))]),
    "conv2d_half": (lambda x, w: F.conv2d(x, w, stride=2), lambda x, w: tF.conv2d(x, w, stride=2),
                    [("h", (1, 2, 5, 5)), ("h", (3, 2, 3, 3))]),
    "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w, stride=2),
                         lambda x, w: tF.conv_transpose2d(x, w, stride=2),
                         [("f", (1, 2, 3, 3)), ("f", (2, 3, 2, 2))]),
    "unfold": (lambda x: F.unfold(x, 2), lambda x: tF.unfold(x, 2), [("h", (1, 2, 4, 4))]),
    "fold": (lambda x: F.fold(x, (4, 4), 2), lambda x: tF.fold(x, (4, 4), 2),
             [("h", (1, 8, 9))]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), lambda x: tF.max_pool2d(x, 2),
                   [("h", (1, 2, 4, 4))]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 2), lambda x: tF.avg_pool2d(x, 2),
                   [("h", (1, 2, 4, 4))]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, 2),
                            lambda x: tF.adaptive_avg_pool2d(x, 2), [("h", (1, 2, 5, 5))]),
    "adaptive_max_pool2d": (lambda x: F.adaptive_max_pool2d(x, 2),
                            lambda x: tF.adaptive_max_pool2d(x, 2), [("h", (1, 2, 5, 5))]),
    "max_unpool2d": (lambda x, i: F.max_unpool2d(x, i, 2), lambda x, i: tF.max_unpool2d(x, i, 2),
                     [("h", (1, 2, 2, 2)), ("i", (1, 2, 2, 2), 16)]),
    "local_response_norm": (lambda x: F.local_response_norm(x, 3),
                            lambda x: tF.local_response_norm(x, 3), [("h", (2, 4, 3))]),
    "ctc_loss": (lambda lp, t: F.ctc_loss(lp, t, [5, 4], [2, 1]),
                 lambda lp, t: tF.ctc_loss(lp, t, [5, 4], [2, 1]),
                 [("f", (5, 2, 4)), ("i", (2, 2), 4)]),
    # absentA38's ops (distances, order statistics, float parts, polygamma)
    "cdist": (lambda x, y: ta.cdist(x, y, p=1.0), lambda x, y: torch.cdist(x, y, p=1.0),
              [("h", (2, 3, 4)), ("f", (2, 5, 4))]),
    "cdist_mm": (lambda x, y: ta.cdist(x, y), lambda x, y: torch.cdist(x, y),
                 [("h", (2, 30, 4)), ("f", (2, 30, 4))]),     # > 25 rows: the matrix product
    "pdist": (lambda x: F.pdist(x), lambda x: tF.pdist(x),
              [("f", (4, 3))]),        # torch's pdist has no half kernel, under autocast too
    "quantile": (lambda x: ta.quantile(x, 0.3, dim=1), lambda x: torch.quantile(x, 0.3, dim=1),
                 [("h", (3, 5))]),
    "frexp": (lambda x: ta.frexp(x)[0], lambda x: torch.frexp(x)[0], [("h", (3, 4))]),
    "polygamma": (lambda x: ta.polygamma(1, x), lambda x: torch.polygamma(1, x),
                  [("hpos", (3, 4))]),
    "mode": (lambda x: ta.mode(x, 1)[0], lambda x: torch.mode(x, 1)[0], [("h", (3, 5))]),
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b),
                   lambda x, w, b: tF.group_norm(x, 2, w, b),
                   [("h", (2, 4, 3)), ("f", (4,)), ("f", (4,))]),
    "dropout2d": (lambda x: F.dropout2d(x, 1.0), lambda x: tF.dropout2d(x, 1.0),
                  [("h", (1, 2, 3, 3))]),       # p = 1: every channel dropped, no draws
    # special functions (issue 30)
    "erf": (ta.erf, torch.erf, [("h", (3,))]),
    "erfc": (ta.erfc, torch.erfc, [("h", (3,))]),
    "erfinv": (ta.erfinv, torch.erfinv, [("hp", (3,))]),
    "erfcx": (ta.special.erfcx, torch.special.erfcx, [("f", (3,))]),  # no half kernel in torch
    "lgamma": (ta.lgamma, torch.lgamma, [("hpos", (3,))]),
    "digamma": (ta.digamma, torch.digamma, [("hpos", (3,))]),
    "i0": (ta.i0, torch.i0, [("h", (3,))]),
    "i0e": (ta.special.i0e, torch.special.i0e, [("h", (3,))]),
    "i1": (ta.special.i1, torch.special.i1, [("h", (3,))]),
    "i1e": (ta.special.i1e, torch.special.i1e, [("h", (3,))]),
    "ndtr": (ta.special.ndtr, torch.special.ndtr, [("h", (3,))]),
    "ndtri": (ta.special.ndtri, torch.special.ndtri, [("p", (3,))]),
    "log_ndtr": (ta.special.log_ndtr, torch.special.log_ndtr, [("f", (3,))]),
    "entr": (ta.special.entr, torch.special.entr, [("hp", (3,))]),
    "logit": (ta.logit, torch.logit, [("hp", (3,))]),
    "sinc": (ta.sinc, torch.sinc, [("h", (3,))]),
    "asinh": (ta.asinh, torch.asinh, [("h", (3,))]),
    "acosh": (lambda x: ta.acosh(x + 1), lambda x: torch.acosh(x + 1), [("hpos", (3,))]),
    "atanh": (ta.atanh, torch.atanh, [("hp", (3,))]),
    "frac": (ta.frac, torch.frac, [("h", (3,))]),
    "deg2rad": (ta.deg2rad, torch.deg2rad, [("h", (3,))]),
    # pointwise pairs
    "xlogy": (ta.xlogy, torch.xlogy, [("h", (3,)), ("hpos", (3,))]),
    "xlog1py": (ta.special.xlog1py, torch.special.xlog1py, [("h", (3,)), ("hpos", (3,))]),
    "logaddexp": (ta.logaddexp, torch.logaddexp, [("h", (3,)), ("f", (3,))]),
    "hypot": (ta.hypot, torch.hypot, [("h", (3,)), ("h", (3,))]),
    "copysign": (ta.copysign, torch.copysign, [("h", (3,)), ("f", (3,))]),
    "fmax": (ta.fmax, torch.fmax, [("h", (3,)), ("h", (3,))]),
    "clamp_min": (ta.clamp_min, torch.clamp_min, [("h", (3,)), ("h", (3,))]),
    "nextafter": (ta.nextafter, torch.nextafter, [("f", (3,)), ("f", (3,))]),
    "ldexp": (ta.ldexp, torch.ldexp, [("h", (3,)), ("h", (3,))]),
    "addcmul": (ta.addcmul, torch.addcmul, [("h", (3,)), ("f", (3,)), ("f", (3,))]),
    "addcdiv": (ta.addcdiv, torch.addcdiv, [("h", (3,)), ("h", (3,)), ("hpos", (3,))]),
    # reductions
    "logcumsumexp": (lambda x: ta.logcumsumexp(x, 0), lambda x: torch.logcumsumexp(x, 0),
                     [("h", (3,))]),
    "nansum": (ta.nansum, torch.nansum, [("h", (3, 4))]),
    "nanmean": (ta.nanmean, torch.nanmean, [("h", (3, 4))]),
    "median": (lambda x: x.median(), lambda x: x.median(), [("h", (3, 4))]),
    "nanmedian": (lambda x: x.nanmedian(), lambda x: x.nanmedian(), [("h", (3, 4))]),
    # structure and picks
    "masked_select": (ta.masked_select, torch.masked_select, [("h", (3,)), ("m", (3,))]),
    "block_diag": (ta.block_diag, torch.block_diag, [("h", (2, 2)), ("f", (1, 3))]),
    "diag_embed": (ta.diag_embed, torch.diag_embed, [("h", (2, 3))]),
    "bernoulli": (lambda p: ta.bernoulli(p.round()), lambda p: torch.bernoulli(p.round()),
                  [("hp", (3,))]),                 # p in {0, 1}: the draws are certain
    # linear algebra (torch has no half kernels; its CPU autocast lists some as float32)
    "inv": (ta.linalg.inv, torch.linalg.inv, [("f", (3, 3))]),
    "det": (ta.linalg.det, torch.linalg.det, [("f", (3, 3))]),
    "slogdet_sign": (lambda a: ta.linalg.slogdet(a)[0], lambda a: torch.linalg.slogdet(a)[0],
                     [("f", (3, 3))]),
    "slogdet_logabsdet": (lambda a: ta.linalg.slogdet(a)[1],
                          lambda a: torch.linalg.slogdet(a)[1], [("f", (3, 3))]),
    "solve": (ta.linalg.solve, torch.linalg.solve, [("f", (3, 3)), ("f", (3, 2))]),
    "eigvalsh": (ta.linalg.eigvalsh, torch.linalg.eigvalsh, [("f", (3, 3))]),
    "svdvals": (ta.linalg.svdvals, torch.linalg.svdvals, [("f", (3, 2))]),
    "inv_half": (ta.linalg.inv, torch.linalg.inv, [("h", (3, 3))]),   # float32 in CPU autocast
    "solve_half": (ta.linalg.solve, torch.linalg.solve, [("h", (3, 3)), ("f", (3, 2))]),
    "eigvalsh_half": (ta.linalg.eigvalsh, torch.linalg.eigvalsh, [("h", (3, 3))]),
    "svdvals_half": (ta.linalg.svdvals, torch.linalg.svdvals, [("h", (3, 2))]),
    # decompositions and solvers (float32 in torch's CPU autocast; matrix_exp keeps the dtype)
    "cholesky_half": (lambda a: ta.linalg.cholesky(a @ a.mT + 3 * ta.eye(3, dtype=a.dtype)),
                      lambda a: torch.linalg.cholesky(a @ a.mT + 3 * torch.eye(3,
                                                                               dtype=a.dtype)),
                      [("h", (3, 3))]),
    "cholesky_ex_half": (lambda a: ta.linalg.cholesky_ex(a @ a.mT + 3 * ta.eye(3,
                                                                             dtype=a.dtype)).L,
                         lambda a: torch.linalg.cholesky_ex(
                             a @ a.mT + 3 * torch.eye(3, dtype=a.dtype)).L, [("h", (3, 3))]),
    "qr_half": (lambda a: ta.linalg.qr(a).R, lambda a: torch.linalg.qr(a).R, [("h", (3, 2))]),
    "eigh_half": (lambda a: ta.linalg.eigh(a).eigenvalues,
                  lambda a: torch.linalg.eigh(a).eigenvalues, [("h", (3, 3))]),
    "svd_half": (lambda a: ta.linalg.svd(a).S, lambda a: torch.linalg.svd(a).S,
                 [("h", (3, 2))]),
    "solve_triangular": (lambda a, b: ta.linalg.solve_triangular(a + 3, b, upper=True),
                         lambda a, b: torch.linalg.solve_triangular(a + 3, b, upper=True),
                         [("f", (3, 3)), ("f", (3, 2))]),
    "triangular_solve_half": (lambda b, a: ta.triangular_solve(b, a + 3)[1],
                              lambda b, a: torch.triangular_solve(b, a + 3)[1],
                              [("h", (3, 2)), ("h", (3, 3))]),
    "pinverse_half": (ta.pinverse, torch.pinverse, [("h", (3, 2))]),
    "lstsq_half": (lambda a, b: ta.linalg.lstsq(a, b).solution,
                   lambda a, b: torch.linalg.lstsq(a, b).solution,
                   [("h", (4, 2)), ("h", (4, 1))]),
    "matrix_exp_half": (ta.linalg.matrix_exp, torch.linalg.matrix_exp, [("h", (3, 3))]),
    # activations
    "mish": (F.mish, tF.mish, [("h", (3,))]),
    "celu": (F.celu, tF.celu, [("h", (3,))]),
    "selu": (F.selu, tF.selu, [("h", (3,))]),
    "hardsigmoid": (F.hardsigmoid, tF.hardsigmoid, [("h", (3,))]),
    "hardswish": (F.hardswish, tF.hardswish, [("h", (3,))]),
    "hardshrink": (F.hardshrink, tF.hardshrink, [("h", (3,))]),
    "softshrink": (F.softshrink, tF.softshrink, [("h", (3,))]),
    "threshold": (lambda x: F.threshold(x, 0.1, 20.0), lambda x: tF.threshold(x, 0.1, 20.0),
                  [("h", (3,))]),
    "rrelu": (F.rrelu, tF.rrelu, [("h", (3,))]),     # eval mode: one fixed slope, no draws
    "prelu": (F.prelu, tF.prelu, [("f", (2, 3)), ("f", (1,))]),
    "prelu_half": (F.prelu, tF.prelu, [("h", (2, 3)), ("h", (3,))]),
    # recurrent layers: torch's modules with the same weights (inputs here)
    "lstm": (lambda x, w_ih, w_hh: _recurrent(ta, "LSTM", x, w_ih, w_hh),
             lambda x, w_ih, w_hh: _recurrent(torch, "LSTM", x, w_ih, w_hh),
             [("f", (3, 2, 4)), ("f", (20, 4)), ("f", (20, 5))]),
    "gru": (lambda x, w_ih, w_hh: _recurrent(ta, "GRU", x, w_ih, w_hh),
            lambda x, w_ih, w_hh: _recurrent(torch, "GRU", x, w_ih, w_hh),
            [("f", (3, 2, 4)), ("f", (15, 4)), ("f", (15, 5))]),
    "rnn": (lambda x, w_ih, w_hh: _recurrent(ta, "RNN", x, w_ih, w_hh),
            lambda x, w_ih, w_hh: _recurrent(torch, "RNN", x, w_ih, w_hh),
            [("f", (3, 2, 4)), ("f", (5, 4)), ("f", (5, 5))]),
    "lstm_cell": (lambda x, w_ih, w_hh: _recurrent(ta, "LSTMCell", x, w_ih, w_hh),
                  lambda x, w_ih, w_hh: _recurrent(torch, "LSTMCell", x, w_ih, w_hh),
                  [("f", (2, 4)), ("f", (20, 4)), ("f", (20, 5))]),
    "gru_cell": (lambda x, w_ih, w_hh: _recurrent(ta, "GRUCell", x, w_ih, w_hh),
                 lambda x, w_ih, w_hh: _recurrent(torch, "GRUCell", x, w_ih, w_hh),
                 [("f", (2, 4)), ("f", (15, 4)), ("f", (15, 5))]),
    # mods30's ops: bilinear, the margin losses, interpolate (Resample, ResampleArea)
    "bilinear": (F.bilinear, tF.bilinear,
                 [("h", (3, 4)), ("h", (3, 5)), ("h", (6, 4, 5)), ("h", (6,))]),
    "multi_margin_loss": (F.multi_margin_loss, tF.multi_margin_loss,
                          [("h", (4, 5)), ("i", (4,), 5)]),
    "multilabel_margin_loss": (F.multilabel_margin_loss, tF.multilabel_margin_loss,
                               [("h", (4, 5)), ("i", (4, 5), 5)]),
    "interpolate_bilinear": (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
                             lambda x: tF.interpolate(x, scale_factor=2, mode="bilinear"),
                             [("h", (1, 2, 3, 4))]),
    "interpolate_area": (lambda x: F.interpolate(x, size=(2, 3), mode="area"),
                         lambda x: tF.interpolate(x, size=(2, 3), mode="area"),
                         [("h", (1, 2, 4, 6))]),
    # interp39's ops: grid_sample (GridSample), embedding_bag (EmbeddingBag)
    "grid_sample": (lambda x, g: F.grid_sample(x, g, align_corners=False),
                    lambda x, g: tF.grid_sample(x, g, align_corners=False),
                    [("h", (1, 2, 4, 5)), ("h", (1, 3, 2, 2))]),
    "embedding_bag": (lambda i, w: F.embedding_bag(i, w, mode="sum"),
                      lambda i, w: tF.embedding_bag(i, w, mode="sum"),
                      [("i", (2, 3), 5), ("h", (5, 4))]),
}


def _recurrent(lib, name, x, w_ih, w_hh):
    """``lib.nn.<name>(4, 5, bias=False)`` run on x with the weights w_ih and w_hh (inputs of
    the pair, so both frameworks use the same numbers): the output sequence (or h')."""
    module = getattr(lib.nn, name)(4, 5, bias=False)
    suffix = "" if name.endswith("Cell") else "_l0"
    weights = {"weight_ih" + suffix: w_ih, "weight_hh" + suffix: w_hh}
    if lib is torch:
        out = torch.func.functional_call(module, weights, (x,))
    else:
        module.__dict__.update(weights)     # plain tensors in place of the parameters
        out = module(x)
    return out[0] if isinstance(out, tuple) else out


def _setitem_view(x, v):
    """A write through a view of a tensor in the graph (CopySlices / AsStrided)."""
    y = x * 1
    row = y[0]
    row[1] = v
    return y


def _setitem(x, v):
    y = x * 1
    y[0] = v
    return y


def _arrays(spec, rng):
    out = []
    for item in spec:
        kind, shape = item[0], item[1]
        if kind == "i":
            out.append(("i", rng.integers(0, item[2], size=shape)))
        elif kind == "distinct":         # distinct rows in each column
            columns = [rng.permutation(item[2])[:shape[0]] for _ in range(shape[1])]
            out.append(("i", np.stack(columns, axis=1)))
        elif kind == "m":
            out.append(("m", rng.random(shape) > 0.5))
        elif kind in ("p", "hp"):
            out.append((kind[0], rng.uniform(0.1, 0.9, size=shape).astype(np.float32)))
        elif kind in ("pos", "hpos", "rpos"):
            out.append((kind[0] if kind != "rpos" else "r",
                        rng.uniform(0.5, 2.0, size=shape).astype(np.float32)))
        else:
            out.append((kind, rng.standard_normal(shape).astype(np.float32)))
    return out


def inputs_for(spec, low_name, all_half=False):
    """The same numbers as tinyattn and torch tensors; "h" inputs in the autocast dtype
    (``all_half``: every floating input)."""
    ours, theirs = [], []
    for (kind, array), item in zip(_arrays(spec, np.random.default_rng(0)), spec):
        t = torch.tensor(array)
        x = ta.tensor(array)
        if item[0] in ("h", "hp", "hpos") or (all_half and kind not in ("i", "m")):
            t, x = t.to(getattr(torch, low_name)), x.to(low_name)
        elif item[0] == "d":
            t, x = t.double(), x.double()
        if kind not in ("i", "m", "r"):   # "r": running statistics, no gradient
            t.requires_grad_(True)
            x.requires_grad_(True)
        ours.append(x)
        theirs.append(t)
    return ours, theirs


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


