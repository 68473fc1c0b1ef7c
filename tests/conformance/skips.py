"""The skip table: every conformance case the harness does not compare, each with its reason.

Rows are built with skip_rules.op_skip / module_skip / optim_skip; skip_rules.py says what a
row means (kinds "structure", "skip", "disagrees"). test_skip_table.py keeps the table true:
every row names an entry that exists in torch's database and that tinyattn has, and a row of
a known disagreement fails the run as soon as tinyattn agrees (delete the row then).
"""
from __future__ import annotations

from typing import List

import torch

from .op_runner import RUN_ALL
from .skip_rules import (RANDOM, UNINITIALISED, Skip, desc_is, has_kwarg,
                         input_not_tensor, kwarg_is, module_skip, op_skip,
                         optim_skip, predicate, zero_dim)

__all__ = ["TABLE"]

_INTS = ("int32", "int64")
_HALF = ("float16", "bfloat16")


def _dropout_on(sample: object) -> bool:
    """samples with dropout_p > 0"""
    return (sample.kwargs.get("dropout_p") or 0) > 0


# ------------------------------------------------------------------ cannot be compared
_RANDOM_OPS = ("normal", "normal.in_place", "normal.number_mean", "uniform", "randn",
               "randn_like", "rand_like", "randint", "randint_like", "multinomial",
               "exponential", "cauchy", "geometric", "log_normal")

_drawn_windows = predicate("samples without _random_samples (the windows are drawn at each "
                           "call)", lambda s: s.kwargs.get("_random_samples") is None)

CANNOT_COMPARE: List[Skip] = [
    *[op_skip(name, "values", RANDOM, kind="structure") for name in _RANDOM_OPS],
    op_skip("normal", "gradients", RANDOM, kind="skip"),
    op_skip("normal.number_mean", "gradients", RANDOM, kind="skip"),
    op_skip("nn.functional.dropout", "values", RANDOM, kind="structure"),
    op_skip("nn.functional.dropout", "gradients", RANDOM, kind="skip"),
    *[op_skip(f"nn.functional.{name}", "values", RANDOM, kind="structure")
      for name in ("dropout2d", "dropout3d", "alpha_dropout",
                   "feature_alpha_dropout.with_train")],
    *[op_skip(f"nn.functional.{name}", "gradients", RANDOM, kind="skip")
      for name in ("alpha_dropout", "feature_alpha_dropout.with_train")],
    *[op_skip(f"nn.functional.{name}", "gradients", RANDOM, kind="skip")
      for name in ("dropout2d", "dropout3d")],
    *[op_skip(f"nn.functional.fractional_max_pool{d}d", "values", RANDOM, kind="structure",
              when=_drawn_windows) for d in (2, 3)],
    *[op_skip(f"nn.functional.fractional_max_pool{d}d", "gradients", RANDOM, kind="skip",
              when=_drawn_windows) for d in (2, 3)],
    op_skip("nn.functional.scaled_dot_product_attention", "values", RANDOM, kind="structure",
            when=_dropout_on),
    op_skip("nn.functional.scaled_dot_product_attention", "gradients", RANDOM, kind="skip",
            when=_dropout_on),
    *[op_skip(name, "values", UNINITIALISED, kind="structure")
      for name in ("empty", "empty_like", "new_empty")],
    *[op_skip(name, "errors", "torch's unbound Tensor.__r*__ refuses a self that is not a "
              "tensor; tinyattn's Python method can only be handed one by calling "
              "Tensor.__radd__(2, x) by hand, which no program does", kind="skip",
              when=input_not_tensor)
      for name in ("__radd__", "__rmul__", "__rsub__")],
    op_skip("__rsub__", "values", "torch 2.13's unbound Tensor.__rsub__(1, x) returns "
            "NotImplemented (a number as self); tinyattn's computes x's reflected difference. "
            "Only a call of the unbound method by hand reaches it: 1 - x and x.__rsub__(1) "
            "agree", kind="skip", when=input_not_tensor),
]

# ------------------------------------------------------------------ on purpose
def _view_overlaps(sample: object) -> bool:
    """as_strided(input, size, stride, ...): do two of the view's elements share memory?"""
    args = list(getattr(sample, "args", ()))
    size = args[0] if args else sample.kwargs.get("size")
    stride = args[1] if len(args) > 1 else sample.kwargs.get("stride")
    if size is None or stride is None or any(int(n) == 0 for n in size):
        return False
    offsets = {0}
    for n, step in zip(size, stride):
        offsets = {o + i * int(step) for o in offsets for i in range(int(n))}
    count = 1
    for n in size:
        count *= int(n)
    return len(offsets) < count


ON_PURPOSE: List[Skip] = [
    op_skip("as_strided", "saves", "not implemented, refused on purpose: an as_strided view "
            "whose elements share memory is read-only in tinyattn (docs/pytorch.md: torch "
            "writes a shared element once per element that reaches it, so as_strided(x, (2, 2, "
            "2, 2), (1, 1, 1, 1)).mul_(2) multiplies x[3] by 16; tinyattn would change it "
            "once, a silent difference), so the harness's in-place write into the output after "
            "the op raises where torch's goes through",
            when=predicate("samples whose view has elements sharing memory",
                           lambda s: _view_overlaps(s))),
    op_skip("mean", "errors", "on purpose: the mean of an integer tensor is the default "
            "float dtype (float32 unless set) in tinyattn, torch refuses it (docs/pytorch.md, "
            "what differs on purpose)",
            when=predicate("samples with an integer input or dtype", lambda s: (
                not s.input.is_floating_point()) or s.kwargs.get("dtype") is not None)),
]

# ------------------------------------------------------------------ to fix
TO_FIX: List[Skip] = []

# ------------------------------------------------------------------ not implemented
NOT_IMPLEMENTED: List[Skip] = [
    op_skip("nn.functional.embedding", "values", "not implemented, refused loudly: "
            "sparse=True asks for a sparse (COO) gradient, and tinyattn has no sparse tensors; "
            "a dense gradient would differ silently (grad.is_sparse, SparseAdam), so "
            "F.embedding and nn.Embedding(sparse=True) raise NotImplementedError at once",
            when=kwarg_is("sparse", True)),
    op_skip("nn.functional.embedding_bag", "values", "not implemented, refused loudly: "
            "sparse=True asks for a sparse (COO) gradient, and tinyattn has no sparse tensors "
            "(as F.embedding's row); F.embedding_bag and nn.EmbeddingBag(sparse=True) raise "
            "NotImplementedError at once", when=kwarg_is("sparse", True)),
    op_skip("unfold", "saves", "not implemented, refused loudly: overlapping windows "
            "(step < size) share memory, and an in-place write into them is undefined in "
            "torch (its docs: clone before writing); torch runs it element by element, so a "
            "shared element is changed once per window (mul_(2) multiplies it by 2 per "
            "window), while tinyattn's in-place ops compute the result first and would write "
            "each element once, a silent difference, so tinyattn's overlapping windows are "
            "read-only and the write raises a RuntimeError (docs/pytorch.md)",
            when=predicate("samples whose windows overlap (step < size, two or more windows)",
                           lambda s: _unfold_overlaps(s))),
]


def _unfold_overlaps(sample: object) -> bool:
    dimension, size, step = sample.args[:3]
    length = sample.input.shape[dimension] if sample.input.dim() else 1
    return step < size and (length - size) // step + 1 > 1

# ------------------------------------------------------------------ new ops of issue 30 (opsB30)
def _expanded_out(sample: object) -> bool:
    """samples whose out= tensor is expanded (a stride of 0)"""
    out = sample.kwargs.get("out")
    return isinstance(out, torch.Tensor) and 0 in out.stride() and out.numel() > 1


def _out_aliased(sample: object) -> bool:
    """samples whose out= is expanded or shares memory with another input"""
    out = sample.kwargs.get("out")
    if not isinstance(out, torch.Tensor):
        return False
    if 0 in out.stride() and out.numel() > 1:
        return True
    where = out.untyped_storage().data_ptr()
    inputs = [sample.input, *sample.args]
    return any(isinstance(t, torch.Tensor) and t is not out
               and t.untyped_storage().data_ptr() == where for t in inputs)


def _training(sample: object) -> bool:
    """samples with training=True"""
    return bool(sample.kwargs.get("training"))


NEW_OPS_B: List[Skip] = [
    op_skip("nn.functional.rrelu", "values", RANDOM, kind="structure", when=_training),
    op_skip("nn.functional.rrelu", "gradients", RANDOM, kind="skip", when=_training),
    op_skip("bernoulli", "values", RANDOM, kind="structure"),
    *[op_skip(name, "errors", "the harness converts torch's expanded out= tensor (a "
              "stride of 0) into a dense one for tinyattn, so the overlap torch refuses is "
              "not there to refuse", kind="skip", when=_expanded_out)
      for name in ("bernoulli", "masked_select")],
    op_skip("take", "errors", "the harness converts torch's out= that is expanded or that "
            "shares memory with the index into a tensor of its own, so the overlap torch "
            "refuses is not there to refuse", kind="skip", when=_out_aliased),
]

# ------------------------------------------------------------------ issue 30's new ops (A)
_holds_complex = predicate("samples with a complex tensor", lambda s: any(
    isinstance(t, torch.Tensor) and t.is_complex() for t in (s.input, *s.args)))
_number_bound = predicate("a tensor clamped by a Python number", lambda s: isinstance(
    s.input, torch.Tensor) and bool(s.args) and isinstance(s.args[0], (int, float)))

COVERAGE_A: List[Skip] = [
    *[op_skip(name, "errors", "op_db lists torch.clamp_min(tensor([1, 2, 3]), 2) as an error "
              "input, yet torch computes it (tensor([2, 2, 3])); tinyattn computes it too",
              kind="skip", when=_number_bound) for name in ("clamp_min", "clamp_max")],
    *[op_skip(name, "values", "tinyattn has no complex dtype", kind="skip",
              when=_holds_complex) for name in ("addcmul", "addcdiv")],
    op_skip("addbmm", "values", "not implemented, refused loudly: torch's addbmm_ resizes a "
            "(1,)- or (p,)-shaped self to the (n, p) result (its out= resize rule, even with "
            "views of self alive); tinyattn refuses an in-place op that would change the "
            "tensor's shape with a RuntimeError, as torch's other in-place ops (add_, mul_) do",
            variants=("inplace",), when=predicate("an input smaller than the result", lambda s:
                s.input.dim() < 2)),
    *[op_skip(name, "errors", "torch's unbound Tensor.__r*__ refuses a self that is not a "
              "tensor; tinyattn's Python method can only be handed one by calling "
              "Tensor.__rand__(2, x) by hand, which no program does", kind="skip",
              when=input_not_tensor)
      for name in ("__rand__", "__ror__", "__rxor__", "__rdiv__")],
]

# ------------------------------------------------------------------ modules and optimizers
# (module_db and optim_db rows: test_module_db.py, test_optim_db.py; kept in this one block)
MODULES_AND_OPTIMIZERS: List[Skip] = [
    optim_skip("Rprop", "not implemented, refused on purpose: a parameter group holding a "
               "hyperparameter the optimizer does not have (the harness's weight_decay, which "
               "Rprop lacks) is refused, where torch ignores it silently and a learner would "
               "believe the decay applied (docs/pytorch.md, not implemented here)",
               when=desc_is("two param groups (harness)")),
    optim_skip("LBFGS", "not comparable: once L-BFGS nears the minimum, y = g_(k+1) - g_k "
               "is a difference of nearly equal gradients, so the 1e-16 round-off in which the "
               "two frameworks' gradients differ grows to 1e-3 within one 20-iteration step "
               "(torch against itself started 1 ulp apart differs by 1.4e-3 after step 2); "
               "tests/test_optim_more.py compares short runs", kind="skip",
               when=desc_is("default", "tolerance_grad")),
]

# ------------------------------------------------------------------ compositions (stream cov30)
# ops/compositions.py builds dist and soft_margin_loss from existing ops; they note their
# inputs (and dist its result) with autograd.keep_versions, as torch's one node keeps them.
COMPOSITIONS_COV30: List[Skip] = []

# ------------------------------------------------------------------ out= aliasing (edge30)
def _out_overlaps_an_input(sample: object) -> bool:
    """samples whose out= is expanded or shares memory with an input (lists looked into)"""
    out = sample.kwargs.get("out")
    if not isinstance(out, torch.Tensor):
        return False
    if 0 in out.stride() and out.numel() > 1:
        return True
    where = out.untyped_storage().data_ptr()
    inputs = [sample.input, *sample.args]
    inputs = [t for v in inputs for t in (v if isinstance(v, (list, tuple)) else [v])]
    return any(isinstance(t, torch.Tensor) and t is not out
               and t.untyped_storage().data_ptr() == where for t in inputs)


OUT_ALIASING: List[Skip] = [
    *[op_skip(name, "errors", "the harness converts torch's out= that is expanded or a view "
              "of an input into a tensor of its own, so the overlap torch refuses is not there "
              "to refuse (tinyattn refuses an out= that is an input or shares its memory: "
              "tests/test_edges_against_torch.py)", kind="skip", when=_out_overlaps_an_input)
      for name in ("gather", "index_select", "cat")],
]

# ------------------------------------------------------------------ linalg30's ops
_MATRIX_EXP_HALF = ("torch bug not copied: torch 2.13's float16/bfloat16 CPU matrix_exp is "
                    "far off (inf and NaN on op_db's samples; about -1.3e30 on the diagonal "
                    "for exp(0.3 * randn(3, 3)) in bfloat16, inf in float16, where the answer "
                    "is near 1); tinyattn gives the float64 result rounded to the half dtype "
                    "(docs/pytorch.md, where torch has a documented bug)")
LINALG30: List[Skip] = []

# ------------------------------------------------------------------ torch bugs not copied
# rows where torch's value is plainly wrong (inf, NaN, 1e30 where the answer is near 1);
# tinyattn gives the right value and says so in docs/pytorch.md ("Where torch has a
# documented bug that tinyattn does not copy"); strict expected failures, as "disagrees"
TORCH_BUG_NOT_COPIED: List[Skip] = [
    op_skip("matrix_exp", "values", _MATRIX_EXP_HALF, dtypes=_HALF),
]

# ------------------------------------------------------------------ interpolate (stream mods30)
INTERPOLATE_MODS30: List[Skip] = [
    op_skip("nn.functional.interpolate.bicubic", "values", "rounding order: in float16 torch's "
            "compiled kernel fuses its float32 multiply-adds in an order tinyattn's matrix "
            "products do not follow (the weights are torch's, bit for bit): on op_db's large "
            "sample (2, 3, 345, 456) -> (270, 270) 7 of 437400 elements differ by one unit in "
            "the last place (float16: 3.1e-5), on some of its random draws and not others "
            "(so skipped, not a strict expected failure); the small samples agree exactly",
            kind="skip", dtypes=("float16",),
            when=predicate("op_db's large sample (over 10^5 elements)",
                           lambda s: s.input.numel() > 100_000)),
]

# F.embedding_bag (stream interp39)
EMBEDDING_BAG_INTERP39: List[Skip] = [
]

# F.instance_norm (stream mods30) is batch norm of the input viewed as (1, N C, *), as torch's
INSTANCE_NORM_MODS30: List[Skip] = [
]

# ------------------------------------------------------------------ absentA38's ops
ABSENT_A38: List[Skip] = []

# F.linear_cross_entropy (stream absentB38): torch's chunked kernel (options=...) is its own
# custom op; tinyattn computes the reference composition for every options value
LINEAR_CROSS_ENTROPY_B38: List[Skip] = [
]

# ------------------------------------------------------------------ error types (harness38)
# check_error compares the exception's type with torch's (ErrorInput.error_type) since
# harness38; what still differs:
ERROR_TYPES_HARNESS38: List[Skip] = [
]

# ------------------------------------------------------------------ out= (harness39)
# The "out" check (since harness39): fn(..., out=t) where the OpInfo says supports_out.
# Stream out39 gave out= to the 55 functions that refused it (ops/torch_keywords.py
# write_out, factories._factory_out); what stays is what the check cannot compare.
OUT_HARNESS39: List[Skip] = [
    *[op_skip(name, "out", RANDOM, kind="structure")
      for name in ("normal", "normal.number_mean", "multinomial", "randn", "bernoulli")],
    op_skip("empty", "out", UNINITIALISED, kind="structure"),
]

# ------------------------------------------------------------------ complex tensors (fft39)
_NO_COMPLEX32 = ("not implemented: float16 inputs give torch's complex32, a dtype tinyattn "
                 "does not have; tinyattn refuses with a RuntimeError that says so")
_DTYPE_VIEW_WRITE = ("not implemented, refused loudly: an in-place write (while gradients are "
                     "recorded) through a view that reinterprets the dtype (view_as_complex, view_as_real, .real, "
                     ".imag), or to its base while it is alive: tinyattn's view histories map "
                     "one element of the base to one of the view, so it refuses the write "
                     "with a RuntimeError; torch gives the view a history")
_FFT_NOISE = ("cannot match: for bool and uint8 signals (whole numbers, so many bins are exactly "
              "0) torch's float32 kernel leaves rounding noise in some of those bins (up to "
              "3.4e-8 of the largest magnitude) or a -0.0 where tinyattn gives exactly 0 (its "
              "real-to-complex path zeroes parts below eps times the largest magnitude, "
              "ops/fft.py), and str() switches to scientific notation or prints -0.0000j for "
              "the noise. Values agree: over op_db's 128 bool/uint8 samples of these eight "
              "entries, max |tinyattn - torch| / max |torch| = 1.1e-7, and tinyattn is never "
              "nonzero where torch is 0; the other dtypes print as torch's")
_whole_number_signal = predicate("bool and uint8 signals", lambda s: isinstance(
    s.input, torch.Tensor) and s.input.dtype in (torch.bool, torch.uint8))
_FFT_NOISE_ENTRIES = ("fft.fft", "fft.ifft", "fft.rfft", "fft.rfft2", "fft.rfftn", "fft.ihfft",
                      "fft.ihfft2", "fft.ihfftn")


def _one_dim_transform(sample: object) -> bool:
    dim, s = sample.kwargs.get("dim"), sample.kwargs.get("s")
    if dim is not None:
        return isinstance(dim, int) or len(dim) == 1
    if s is not None:
        return isinstance(s, int) or len(s) == 1
    return sample.input.ndim == 1


_one_dim = predicate("samples transforming one dim", _one_dim_transform)
_three_dims_in_float32 = predicate("float32-precision samples over dims (-3, -2, -1)", lambda s: (
    s.kwargs.get("dim") == (-3, -2, -1) and s.input.dtype not in (torch.float64,
                                                                   torch.complex128)))
_TORCH_IHFFTN_OUT = ("cannot compare: torch's out= for ihfft2/ihfftn over one dim leaves the out "
                     "tensor as it was (torch 2.13: ihfft2(x, dim=0, out=zeros) stays zeros; "
                     "its result without out= is right); tinyattn writes the result")
_HFFT2_3D = ("cannot match (tinyattn is more accurate): hfft2 over three dims of op_db's "
             "(5, 6, 7) sample in float32: against float64, torch's largest error is 2.2e-5 "
             "and tinyattn's 1.0e-5 (values up to 251; mean errors 6.0e-6 and 3.2e-6), so two "
             "elements differ by just over float32's tolerance")
COMPLEX_FFT39: List[Skip] = [
    *[op_skip(name, "values", _FFT_NOISE, kind="structure", when=_whole_number_signal)
      for name in _FFT_NOISE_ENTRIES],
    *[op_skip(name, "out", _TORCH_IHFFTN_OUT, kind="skip", when=_one_dim)
      for name in ("fft.ihfft2", "fft.ihfftn")],
    op_skip("fft.hfft2", ("values", "out"), _HFFT2_3D, kind="structure",
            when=_three_dims_in_float32),
    op_skip("view_as_complex", "values", "harness: the noncontiguous copy of a (5, 2) input "
            "has a last-dim stride of 2 in torch (refused: 'Tensor must have a last dimension "
            "with stride 1'), but the converter hands tinyattn a contiguous copy", kind="skip",
            dtypes=("float32", "float64")),
    op_skip("complex", "values", _NO_COMPLEX32, dtypes=("float16",)),
    op_skip("view_as_complex", "values", _NO_COMPLEX32, dtypes=("float16",)),
    op_skip("view_as_complex", "saves", _DTYPE_VIEW_WRITE),
    op_skip("where", "values", _NO_COMPLEX32, kind="skip", dtypes=("float16",), when=predicate(
        "samples with a complex number", lambda s: any(isinstance(v, complex) for v in (
            s.input, *s.args)))),
    op_skip("square", "values", "cannot match: torch's complex64 square of an overflowing "
            "z = 1e20 (1 + i) depends on the tensor's length (torch 2.13: -inf+infj in a "
            "3-element tensor, nan+infj in a 60-element one: its vectorised and scalar loops "
            "differ); tinyattn gives nan+infj (the vectorised loop's product, "
            "ops/elementwise.py complex_product) at every length",
            kind="structure", dtypes=("complex64",), when=predicate("samples with elements beyond 1e19", lambda s: (
                s.input.abs().max().item() > 1e19))),
]


# ------------------------------------------------------------------ complex arithmetic (complex43)
_strided_overflowing = predicate(
    "samples with a noncontiguous complex tensor holding elements beyond 1e19", lambda s: any(
        isinstance(t, torch.Tensor) and t.is_complex() and not t.is_contiguous()
        and t.numel() > 0 and t.abs().max().item() > 1e19 for t in (s.input, *s.args)))
_ten_term_products = predicate(
    "the (5, 10) @ (5, 10, 5) and (5, 5, 10, 10) @ (10,) samples", lambda s: (
        tuple(s.input.shape), tuple(s.args[0].shape)) in (((5, 10), (5, 10, 5)),
                                                          ((5, 5, 10, 10), (10,))))
COMPLEX43: List[Skip] = [
    op_skip("mul", "values", "cannot match: torch's complex64 product depends on the memory "
            "layout. Its vectorised loop (contiguous operands) rounds each of ac, bd, ad, bc "
            "and then sums; its scalar loop (noncontiguous operands, and the last few elements) "
            "is compiled with fused multiply-adds, so where a product overflows float32 it "
            "differs: (-501-1e20j) * (-501+1e20j) is inf+0j in the first and inf+3.2e14j in "
            "the second (torch 2.13, AVX2). tinyattn computes every element as the vectorised "
            "loop does (ops/elementwise.py complex_product): op_db's contiguous samples agree "
            "bit for bit, this strided one (stride 2, entries up to 1e20) does not",
            kind="structure", dtypes=("complex64",), when=_strided_overflowing),
    op_skip("matmul", "values", "cannot match the rounding order (tinyattn is as accurate): "
            "a complex64 product sums 10 complex terms of up to 81 in float32, in MKL's order "
            "in torch and OpenBLAS's in tinyattn; on these two samples a few elements differ "
            "by just over the complex64 tolerance (2.7e-5 on values near 10). Against "
            "complex128 over op_db's 14 complex64 samples the largest error relative to the "
            "largest value is torch 1.72e-7, tinyattn 1.32e-7 (means 8.7e-8 and 6.6e-8; "
            "tinyattn worse on 1)", kind="structure", dtypes=("complex64",),
            when=_ten_term_products),
]


def _storage_not_own(sample: object) -> bool:
    """samples whose input is not alone in its memory in order (noncontiguous, a slice)"""
    t = sample.input
    return isinstance(t, torch.Tensor) and not (
        t.is_contiguous() and t.storage_offset() == 0
        and t.untyped_storage().nbytes() == t.numel() * t.element_size())


_STORAGE = ("harness: as_strided reads the input's memory (its storage, from offset 0); torch's "
            "sample is a slice or a noncontiguous copy inside a larger storage (NaN-filled "
            "between the elements), and the converter hands tinyattn a contiguous copy, so the "
            "same sizes, strides and offset read other memory (tests/test_probe42_absent.py "
            "checks as_strided on views against torch)")

STRIDED42: List[Skip] = [
    *[op_skip(name, ("values", "gradients"), _STORAGE, kind="skip", when=_storage_not_own)
      for name in ("as_strided", "as_strided.partial_views")],
    op_skip("empty_strided", "values", UNINITIALISED, kind="structure"),
]

# ------------------------------------------------------------------ rounding order (accuracy43)
# torch's kernel rounds differently from the exact value by more than assert_close's
# tolerance on these samples, in a way that cannot be followed as a rule; tinyattn's result
# is the more accurate one on each (the numbers are in each reason).
def _i0e_half_scalar_path(sample: object) -> bool:
    """samples on which torch's float16/bfloat16 i0e is farther than the dtype's tolerance
    from its own float32 i0e rounded once (its scalar, half-arithmetic path)"""
    x = sample.input
    rounded_once = torch.special.i0e(x.float()).to(x.dtype)     # as assert_close(actual,
    return not torch.allclose(rounded_once, torch.special.i0e(x), equal_nan=True,  # expected)
                              rtol=1e-3 if x.dtype == torch.float16 else 1.6e-2, atol=1e-5)


_I0E_HALF = ("rounding order: tinyattn computes i0e of a float16/bfloat16 tensor in float32 and rounds "
             "once (torch's vectorized path does the same, and the two agree bit for bit there); "
             "torch's scalar path, which it takes for a non-contiguous input and for the last "
             "elements of each contiguous run that do not fill two vectors, evaluates the "
             "Chebyshev series in the half dtype, up to 3 units in the last place off. Over "
             "op_db's 27 samples, largest relative error against float64: torch 3.1e-3 "
             "(float16) and 2.0e-2 (bfloat16), tinyattn 4.8e-4 and 3.7e-3, worse on none; "
             "which elements take the scalar path depends on the layout and the CPU's vector "
             "width, so it is no rule to follow")
_CONV3D_DILATED = ("rounding order: torch's float32 conv3d is oneDNN's kernel, which adds the "
                   "products in its own order (it varies with the shapes and the CPU); tinyattn "
                   "computes a float32 convolution of up to 2^22 products in float64 and rounds "
                   "once (ops/conv.py, WIDE_CONV_PRODUCTS). On this sample (a 4x4x4 kernel, "
                   "dilation 3, sums of 64 products up to 81) torch's largest error against "
                   "float64 is 6.6e-5, tinyattn's 1.5e-5 (half a unit in the last place); over "
                   "op_db's 20 conv3d samples, 5 draws: largest error / largest value torch "
                   "3.1e-7, tinyattn 3.9e-8, tinyattn worse on none")

def _large_scores(sample: object) -> bool:
    """samples whose scores |q k^T| * scale reach 50"""
    q, k = sample.input, sample.args[0]
    scale = sample.kwargs.get("scale") or q.shape[-1] ** -0.5
    if q.shape[-3:-2] != k.shape[-3:-2] and q.dim() >= 3:     # grouped-query heads
        k = k.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3)
    scores = q.double() @ k.double().transpose(-1, -2)
    return scores.numel() > 0 and scores.abs().max().item() * scale >= 50


_SDPA_LARGE_SCORES = (
    "rounding order: where the scores q k^T * scale reach 50 or more (op_db's samples reach "
    "81-95: entries up to 9, head size 8), one float32 rounding of a score is up to 4e-6 and "
    "softmax's exp turns it into a relative 4e-6 of the output, so the order in which the "
    "kernel adds the products decides the last digits. torch's 4-D float32 path is its flash "
    "kernel (blocked GEMMs, an online softmax), its 3-D path the math path (q and k each "
    "scaled by sqrt(scale) first); no order tinyattn tried (a sequential fused multiply-add "
    "in k order, BLAS, scaling before or after, exact float64 scores rounded once) is within "
    "float32's tolerance of torch on all four samples, and neither is torch's own result from "
    "the float64 one by the same measure. tinyattn is as accurate (against float64 over "
    "op_db's 65 samples, five draws: largest error torch 1.74e-5, tinyattn 1.67e-5; mean of "
    "the per-sample largest errors 6.39e-6 and 6.21e-6). Samples with smaller scores are "
    "compared")

ROUNDING_ORDER43: List[Skip] = [
    op_skip("nn.functional.conv3d", "values", _CONV3D_DILATED, dtypes=("float32",),
            when=kwarg_is("dilation", 3), kind="structure"),
    op_skip("nn.functional.scaled_dot_product_attention", "values", _SDPA_LARGE_SCORES,
            dtypes=("float32",), when=_large_scores, kind="structure"),
    # the samples it matches are reference samples (a default run draws those for one
    # floating dtype per op) and values samples outside a default run's four
    *([op_skip("special.i0e", "values", _I0E_HALF, dtypes=_HALF, when=_i0e_half_scalar_path,
               kind="structure")]
      if RUN_ALL else []),
]

TABLE: List[Skip] = (CANNOT_COMPARE + ON_PURPOSE + TO_FIX + NOT_IMPLEMENTED + NEW_OPS_B
                     + COVERAGE_A
                     + MODULES_AND_OPTIMIZERS + COMPOSITIONS_COV30 + OUT_ALIASING
                     + LINALG30 + TORCH_BUG_NOT_COPIED + INTERPOLATE_MODS30 + INSTANCE_NORM_MODS30
                     + EMBEDDING_BAG_INTERP39
                     + ABSENT_A38
                     + LINEAR_CROSS_ENTROPY_B38 + ERROR_TYPES_HARNESS38
                     + OUT_HARNESS39 + COMPLEX_FFT39 + STRIDED42 + COMPLEX43
                     + ROUNDING_ORDER43)
