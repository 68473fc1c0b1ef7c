"""The op table: one row per differentiable op, driving the tests and ``python -m tinyattn
gradcheck``.

A row (``OpSpec``, spec.py) names the op, the function under test (tensors in, tensor out), a
NumPy/SciPy reference for its forward (arrays in, array out), and a maker of input cases over
several shapes (broadcasting, masks, repeated indices). Floating inputs of a case are float64
and require a gradient; integer and boolean inputs (ids, targets, masks) are passed through
without one.

The rows mirror tinyattn/ops/: the rows of the ops in ``ops/softmax.py`` are in
``optable/softmax.py``, and so on (``cases.py`` holds the case makers and references that
several of them share). Adding an op means adding a row to the module of its ops file: it is
then checked like every other. ``OP_TABLE`` lists the modules in ``FAMILIES`` order, the order
in which the ops are explained (arithmetic, reductions, shapes, matmul, softmax, masking,
normalisation, losses, attention, then the rest of PyTorch's ops), each module's rows in the
order written there.
"""
from __future__ import annotations

from typing import List

from . import (activations, attention, batch_norm, channel_dropout, compare, conv, division,
               dropout, einsum, elementwise, embedding, grids, group_norm, hyperbolic, indexing,
               inplace, interleave, inverse_trig, layout, local_attention, loss, masking, matmul,
               nll, norm, normal_sample, pad, performer, pointwise, pointwise_loss, pool, powers,
               products, rearrange, reduce, rnn, robust_loss, rope, rounding, scatter,
               scatter_reduce, shape, softmax, stats, tiled_attention, trig, view_writes)
from . import flat_index, index_writes, more_activations, picks, search, structure, view_copies
from . import binary_special, blas, linalg_ops, more_reductions, special_functions
from . import clamp_bounds          # clamp with tensor bounds
from . import linalg_norms          # matrix norms
from . import decompositions        # cholesky, qr, eigh, svd
from . import linalg_solvers        # triangular and least-squares solves, pinv, matrix_exp
from . import statistics            # cov, corrcoef
from . import bilinear, interpolate, margin_loss
from . import grid_sample, embedding_bag            # grid_sample, affine_grid, embedding_bag
from . import distances, float_parts, order_stats   # cdist, pdist, quantile, mode, frexp
from . import polygamma                             # polygamma, mvlgamma
from . import ctc_loss, linear_cross_entropy, local_response_norm
from . import complex_numbers, fft   # complex tensors and torch.fft
from . import strided               # as_strided
from .spec import OpCase, OpSpec, make_inputs

__all__ = ["OpCase", "OpSpec", "OP_TABLE", "make_inputs", "FAMILIES"]

FAMILIES = [elementwise, powers, trig, reduce, shape, interleave, matmul, softmax, masking,
            dropout, norm, embedding, loss, attention, tiled_attention, rope, inplace, pointwise,
            division, rounding, rearrange, products, activations, stats, robust_loss, compare,
            indexing, layout, pad, einsum, pointwise_loss, nll, hyperbolic, inverse_trig,
            scatter_reduce, scatter, normal_sample, batch_norm, grids, local_attention, performer,
            view_writes, conv, pool, group_norm, channel_dropout, rnn, structure, view_copies,
            index_writes, picks, more_activations, search, flat_index, special_functions,
            binary_special, blas, linalg_ops, more_reductions,
            clamp_bounds, linalg_norms, decompositions, linalg_solvers, statistics,
            bilinear, margin_loss, interpolate, distances, order_stats, float_parts,
            polygamma, local_response_norm, linear_cross_entropy, ctc_loss, grid_sample,
            embedding_bag,
            complex_numbers, fft, strided]

OP_TABLE: List[OpSpec] = [row for family in FAMILIES for row in family.ROWS]
