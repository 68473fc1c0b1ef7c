"""Triangular and least-squares solves, the pseudo-inverse and the matrix exponential, with
hand-derived backwards (docs/derivations.md#solvers-pseudo-inverse-and-matrix-exponential):
torch.linalg.solve_triangular and torch.triangular_solve, linalg.lstsq, linalg.pinv and
torch.pinverse, linalg.matrix_exp (torch.matrix_exp); and, composed from ops with their own
backwards, linalg.matrix_rank, linalg.cond and linalg.vander. Batches (..., m, n) broadcast as
in torch. linalg.eig / eigvals are absent: their results are complex, and tinyattn has no
complex dtype.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .. import backend
from ..amp.dispatch import cast_args
from ..autograd import Function
from ..precision import is_complex_dtype, is_floating
from ..tensor import Tensor
from .return_types import return_type
from .decompositions import check_matrix, check_square, converged

__all__ = ["CoefficientCopy", "solve_triangular", "triangular_solve", "lstsq", "pinv",
           "pinverse", "matrix_rank", "cond", "matrix_exp", "vander"]

TriangularSolveResult = return_type("triangular_solve", ["solution", "cloned_coefficient"])
LstsqResult = return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _mT(a: Any) -> Any:
    return backend.get_array_module(a).swapaxes(a, -1, -2)


def _sum_to(grad: Any, shape: Any) -> Any:
    """grad summed over the batch dims that broadcasting added or widened."""
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


# ------------------------------------------------------------------ triangular solve
def _triangle(a: Any, upper: bool, unitriangular: bool) -> Any:
    xp = backend.get_array_module(a)
    t = xp.triu(a) if upper else xp.tril(a)
    if unitriangular:
        n = a.shape[-1]
        t = t.copy()
        t[..., xp.arange(n), xp.arange(n)] = 1
    return t


def _solve(t: Any, b: Any, upper: bool) -> Any:
    """T^-1 b for triangular T (LAPACK through NumPy's solve); a zero on T's diagonal gives
    inf/NaN by substitution, as torch's triangular solver does."""
    xp = backend.get_array_module(t)
    shape = np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:]
    if t.shape[-1] == 0 or b.shape[-1] == 0:
        return xp.zeros(shape, dtype=b.dtype)
    try:
        return xp.linalg.solve(t, xp.broadcast_to(b, shape))
    except np.linalg.LinAlgError:
        pass
    x = xp.zeros(shape, dtype=b.dtype)
    n = t.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in (range(n - 1, -1, -1) if upper else range(n)):
            done = slice(i + 1, n) if upper else slice(0, i)
            rest = (t[..., i:i + 1, done] @ x[..., done, :])[..., 0, :]
            x[..., i, :] = (b[..., i, :] - rest) / t[..., i, i, None]
    return x


class SolveTriangular(Function):
    """X with T X = B (left) or X T = B, T the upper or lower triangle of A (unit diagonal
    with unitriangular). Left: dB = T^-T g, dA = -dB X^T; right: dB = g T^-T, dA = -X^T dB;
    dA is then kept to T's triangle (without the diagonal when unitriangular), since only
    those entries of A are read. A and X are kept, as torch."""

    def forward(self, a, b, upper: bool, left: bool, unitriangular: bool,
                keep_b: bool = False):
        t = _triangle(a, upper, unitriangular)
        out = _solve(t, b, upper) if left else _mT(_solve(_mT(t), _mT(b), not upper))
        # torch.triangular_solve keeps b too (keep_b): a write to b makes its backward raise
        self.save_for_backward(a, out, upper, left, unitriangular, b.shape,
                               b if keep_b else None)
        return out

    def backward(self, grad):
        a, x, upper, left, unitriangular, b_shape, _ = self.saved
        xp = backend.get_array_module(grad)
        t = _triangle(a, upper, unitriangular)
        if left:
            gb = _solve(_mT(t), grad, not upper)
            ga = -(gb @ _mT(x))
        else:
            gb = _mT(_solve(t, _mT(grad), upper))
            ga = -(_mT(x) @ gb)
        ga = xp.triu(ga, int(unitriangular)) if upper else xp.tril(ga, -int(unitriangular))
        return (_sum_to(ga, a.shape) if self.needs_input_grad[0] else None,
                _sum_to(gb, b_shape) if self.needs_input_grad[1] else None)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool,  # noqa: N803 - torch's names
                     left: bool = True, unitriangular: bool = False,
                     _keep_b: bool = False) -> Tensor:
    """X with A X = B (``left=False``: X A = B) for triangular A (``torch.linalg.
    solve_triangular``): only the upper (``upper=True``) or lower triangle of A is read, and
    with ``unitriangular=True`` its diagonal is taken to be ones. A (..., n, n), B (..., n, k)
    (left) or (..., k, n); batches broadcast."""
    check_square(A, "linalg.solve_triangular", "triangular_solve_cpu")
    check_matrix(B, "linalg.solve_triangular", "triangular_solve_cpu")
    if B.dtype != A.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same "
                           f"dtype, but found A of type {A.dtype.name} and B of type "
                           f"{B.dtype.name} instead")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation {'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{n} "
                           f"and {B.shape[-2]}x{B.shape[-1]})")
    return SolveTriangular.apply(A, B, upper=bool(upper), left=bool(left),
                                 unitriangular=bool(unitriangular), keep_b=_keep_b)


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True,  # noqa: N803 - torch's names
                     transpose: bool = False, unitriangular: bool = False
                     ) -> TriangularSolveResult:
    """``torch.triangular_solve`` (deprecated in torch): (X, a copy of A) with A X = b, or
    A^T X = b with ``transpose=True``; note b comes first and ``upper`` defaults to True."""
    (b, A) = cast_args("triangular_solve", b, A)
    check_square(A, "triangular_solve", "triangular_solve_cpu")
    check_matrix(b, "triangular_solve", "triangular_solve_cpu")
    batch = np.broadcast_shapes(tuple(A.shape[:-2]), tuple(b.shape[:-2]))
    coefficient = A.mT if transpose else A
    solution = solve_triangular(coefficient, b, upper=bool(upper) != bool(transpose),
                                unitriangular=unitriangular, _keep_b=True)
    cloned = CoefficientCopy.apply(A, b, shape=batch + tuple(A.shape[-2:]))
    return TriangularSolveResult(solution, cloned)


class CoefficientCopy(Function):
    """triangular_solve's cloned_coefficient: a copy of A broadcast to the batch. torch makes
    it in the same node as the solution, so b gets a (zero) gradient from it: dA = g summed
    to A's shape, db = 0."""

    def forward(self, a, b, shape):
        xp = backend.get_array_module(a)
        self.save_for_backward(a.shape, b.shape)
        return xp.array(xp.broadcast_to(a, shape))

    def backward(self, grad):
        a_shape, b_shape = self.saved
        xp = backend.get_array_module(grad)
        return _sum_to(grad, a_shape), xp.zeros(b_shape, dtype=grad.dtype)


# ------------------------------------------------------------------ pseudo-inverse
def _tolerance(xp: Any, s_max: Any, dtype: Any, size: int, atol: Any, rtol: Any) -> Any:
    """torch's rule: max(atol, rtol * s_max); rtol defaults to eps * max(m, n) unless
    atol > 0 is given, then to 0."""
    eps = float(np.finfo(dtype).eps)
    if rtol is None:
        rtol = eps * size if atol is None or (np.ndim(atol) == 0 and float(atol) <= 0) \
            else 0.0
    atol = 0.0 if atol is None else atol
    return xp.maximum(xp.asarray(atol, dtype=dtype), xp.asarray(rtol, dtype=dtype) * s_max)


def _array_or_none(value: Any) -> Any:
    return value._data if isinstance(value, Tensor) else value


def _check_tolerances(op: str, shown: str, **tolerances: Any) -> None:
    """torch's checks of pinv/matrix_rank tolerances (atol, rtol, rcond, tol): a Python
    complex is refused by its argument parser (TypeError), a complex tensor by the op
    (RuntimeError); a real number or a real tensor (it broadcasts over the batch) is fine."""
    for name, value in tolerances.items():
        if isinstance(value, complex) or (isinstance(value, np.generic) and
                                          np.iscomplexobj(value)):
            raise TypeError(f"{op}() received an invalid combination of arguments - got "
                            f"(Tensor, {name}=complex): {name} must be a float or a real "
                            f"Tensor (as torch); pass its real part, e.g. {name}=abs(value)")
        if isinstance(value, Tensor) and np.dtype(value.dtype).kind == "c":
            from ..precision import scalar_type_name
            tensor_name = "atol" if name == "tol" else name
            raise RuntimeError(f"torch.{shown}: {tensor_name} tensor of complex type is not "
                               f"supported. Got {scalar_type_name(value.dtype)} (pass a real "
                               f"tolerance, e.g. {name}.abs())")


class Pinv(Function):
    """P = A^+ (singular values at or below the tolerance dropped). At constant rank
    (Golub and Pereyra): dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P, whose
    adjoint is dA = -P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A), computed with
    the smaller of the (m, m) and (n, n) products (A and P are kept, as torch)."""

    def forward(self, a, atol: Any, rtol: Any, hermitian: bool):
        xp = backend.get_array_module(a)
        m, n = a.shape[-2], a.shape[-1]
        if a.size == 0:
            out = xp.zeros(a.shape[:-2] + (n, m), dtype=a.dtype)
        elif hermitian:
            w, v = converged("linalg.eigh", "eigenvalues", xp.linalg.eigh, a)
            tol = _tolerance(xp, xp.abs(w).max(-1), a.dtype, n, atol, rtol)
            keep = xp.abs(w) > tol[..., None]
            inv_w = xp.where(keep, 1 / xp.where(keep, w, 1), 0)
            out = (v * inv_w[..., None, :]) @ _mT(v)
        else:
            u, s, vh = converged("linalg.svd", "singular values", xp.linalg.svd, a,
                                 full_matrices=False)
            tol = _tolerance(xp, s[..., 0], a.dtype, max(m, n), atol, rtol)
            keep = s > tol[..., None]
            inv_s = xp.where(keep, 1 / xp.where(keep, s, 1), 0)
            out = (_mT(vh) * inv_s[..., None, :]) @ _mT(u)
        out = xp.ascontiguousarray(out.astype(a.dtype, copy=False))
        self.save_for_backward(a, out)
        return out

    def backward(self, grad):
        a, p = self.saved
        m, n = a.shape[-2], a.shape[-1]
        pt, gt = _mT(p), _mT(grad)
        if m <= n:
            k = gt @ p
            k_pt = k @ pt
            return -_mT(p @ k) + k_pt - (a @ p) @ k_pt + (pt @ p) @ (gt - k @ a)
        k = p @ gt
        pt_k = pt @ k
        return -_mT(k @ p) + (gt - a @ k) @ p @ pt + pt_k - pt_k @ p @ a


def pinv(A: Tensor, rcond: Any = None, hermitian: bool = False, *,  # noqa: N803
         atol: Any = None, rtol: Any = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse (``torch.linalg.pinv``) of (..., m, n): singular
    values at most max(atol, rtol * largest) count as zero (rtol defaults to eps * max(m, n),
    or 0 when atol > 0 is given; ``rcond`` is torch's older name for rtol).
    ``hermitian=True`` reads the lower triangle of a symmetric A and uses its eigenvalues."""
    (A,) = cast_args("linalg_pinv", A)
    if not isinstance(A, Tensor) or A.ndim < 2 or not is_floating(A.dtype) \
            or np.dtype(A.dtype).itemsize < 4:
        raise RuntimeError(f"linalg.pinv({getattr(A, 'dtype', type(A).__name__)}"
                           f"{list(getattr(A, 'shape', ()))}): expected a tensor with 2 or "
                           f"more dimensions of float, double, cfloat or cdouble types")
    _check_tolerances("linalg_pinv", "linalg.pinv", rcond=rcond, atol=atol, rtol=rtol)
    if rcond is not None:
        if rtol is not None:
            raise RuntimeError("linalg.pinv: pass rtol= or the older rcond=, not both")
        rtol = rcond
    return Pinv.apply(A, atol=_array_or_none(atol), rtol=_array_or_none(rtol),
                      hermitian=bool(hermitian))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:  # noqa: A002 - torch's names
    """``torch.pinverse``: ``linalg.pinv`` with ``rcond`` (default 1e-15) as rtol."""
    (input,) = cast_args("pinverse", input)
    # torch's parser reads rcond as a float: a number or a 0-d real tensor, nothing else
    if isinstance(rcond, Tensor):
        if rcond.ndim != 0:
            raise TypeError("pinverse(): argument 'rcond' (position 2) must be float, not "
                            "Tensor (as torch; a per-matrix tolerance is "
                            "torch.linalg.pinv(A, rtol=tensor))")
    elif isinstance(rcond, bool) or not isinstance(rcond, (int, float, np.integer,
                                                            np.floating)):
        raise TypeError(f"pinverse(): argument 'rcond' (position 2) must be float, not "
                        f"{type(rcond).__name__} (as torch)")
    return pinv(input, rtol=rcond)


def matrix_rank(A: Tensor, tol: Any = None, hermitian: bool = False, *,  # noqa: N803
                atol: Any = None, rtol: Any = None) -> Tensor:
    """The number of singular values above max(atol, rtol * largest) (``torch.linalg.
    matrix_rank``), int64, per matrix of the batch; pinv's tolerance rule. ``tol`` is torch's
    older name for atol (with rtol 0). No gradient (an integer)."""
    (A,) = cast_args("linalg_matrix_rank", A)
    _check_tolerances("linalg_matrix_rank", "linalg.matrix_rank", tol=tol, atol=atol,
                      rtol=rtol)
    _refuse_half(A)
    check_matrix(A, "linalg.matrix_rank", "linalg_svd_cpu")
    if tol is not None:
        atol, rtol = tol, 0.0 if rtol is None else rtol
    xp = backend.get_array_module(A._data)
    m, n = A.shape[-2], A.shape[-1]
    if A.numel() == 0:
        return Tensor._wrap(xp.zeros(A.shape[:-2], dtype=np.int64))
    if hermitian:
        s = xp.abs(converged("linalg.eigh", "eigenvalues", xp.linalg.eigvalsh, A._data))
        s_max = s.max(-1)
    else:
        s = converged("linalg.svd", "singular values", xp.linalg.svd, A._data,
                      compute_uv=False)
        s_max = s[..., 0]
    cut = _tolerance(xp, s_max, A.dtype, max(m, n), _array_or_none(atol), _array_or_none(rtol))
    return Tensor._wrap((s > cut[..., None]).sum(-1).astype(np.int64))


def _refuse_half(a: Any) -> None:
    if isinstance(a, Tensor) and is_floating(a.dtype) and np.dtype(a.dtype).itemsize < 4:
        raise RuntimeError(f"This function doesn't handle types other than float and double "
                           f"(as torch; got {a.dtype}): convert with .float() first")


# ------------------------------------------------------------------ least squares
_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


class LstsqSolution(Function):
    """X = A^+ B, the least-squares (minimum-norm) solution. As a function of B it is linear:
    dB = A^+T g; as a function of A it is pinv's backward applied to g B^T, the gradient that
    A^+ receives (A and B are kept, as torch)."""

    def forward(self, a, b, rcond: Any):
        self.pinv = Pinv()
        p = self.pinv.forward(a, None, rcond, False)
        out = p @ b
        self.save_for_backward(a, b, p, out)            # X too, as torch keeps it
        return out

    def backward(self, grad):
        a, b, p, _ = self.saved
        self.pinv.saved = (a, p)
        ga = _sum_to(self.pinv.backward(grad @ _mT(b)), a.shape) \
            if self.needs_input_grad[0] else None
        gb = _sum_to(_mT(p) @ grad, b.shape) if self.needs_input_grad[1] else None
        return ga, gb


def lstsq(A: Tensor, B: Tensor, rcond: Optional[float] = None, *,  # noqa: N803
          driver: Optional[str] = None) -> LstsqResult:
    """(solution, residuals, rank, singular_values) of min ||A X - B|| (``torch.linalg.
    lstsq``): A (..., m, n), B (..., m, k) or (..., m). Every driver ("gelsy", the CPU
    default, "gels", "gelsd", "gelss") gives the minimum-norm solution; what else each
    returns follows torch (residuals for m > n except with gelsy, rank except with gels,
    singular values with gelsd and gelss; empty tensors otherwise). Gradients flow through
    the solution only, as in torch."""
    (A, B) = cast_args("linalg_lstsq", A, B)
    _refuse_half(A)
    check_matrix(A, "torch.linalg.lstsq", "linalg_lstsq_cpu")
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")
    if not isinstance(B, Tensor) or B.dtype != A.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {A.dtype} and other's dtype "
                           f"{getattr(B, 'dtype', type(B).__name__)}")
    vector = B.ndim == A.ndim - 1
    b = B.unsqueeze(-1) if vector else B
    if b.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2) "
                           f"({A.shape[-2]} and {b.shape[-2]})")
    solution = LstsqSolution.apply(A, b, rcond=rcond)
    xp = backend.get_array_module(A._data)
    m, n = A.shape[-2], A.shape[-1]
    batch = tuple(solution.shape[:-2])
    s = converged("linalg.svd", "singular values", xp.linalg.svd, A._data,
                  compute_uv=False) if A.numel() else \
        xp.zeros(A.shape[:-2] + (min(m, n),), dtype=A.dtype)
    s = xp.broadcast_to(s, batch + s.shape[-1:])
    cut = _tolerance(xp, s[..., 0] if s.shape[-1] else xp.zeros(batch, A.dtype), A.dtype,
                     max(m, n), None, rcond)
    rank = (s > cut[..., None]).sum(-1).astype(np.int64)
    empty = xp.zeros((0,), dtype=A.dtype)
    # empty; in the graph, as torch's, with a version counter of its own (not a view of the
    # solution: writing to it must not invalidate the solution's backward, as in torch)
    residuals = solution.reshape(-1)[:0].clone()
    if driver != "gelsy" and m > n and bool((rank == n).all()):
        misfit = A @ solution - b               # differentiable, as torch's residuals
        residuals = (misfit * misfit).sum(-2)
    rank_out = rank if driver != "gels" else xp.zeros((0,), dtype=np.int64)
    values = s if driver in ("gelsd", "gelss") else empty
    if vector:
        solution = solution.squeeze(-1)
    return LstsqResult(solution, residuals, Tensor._wrap(rank_out),
                       Tensor._wrap(xp.ascontiguousarray(values)))


# ------------------------------------------------------------------ matrix exponential
class MatrixExp(Function):
    """E = exp(A) = sum A^k / k!. Its derivative in direction dA is the upper-right block of
    exp([[A, dA], [0, A]]) (Mathias' block trick); the adjoint is the same with A^T:
    dA = upper-right block of exp([[A^T, g], [0, A^T]]) (A is kept, as torch)."""

    def forward(self, a):
        self.save_for_backward(a)
        return _expm(a)

    def backward(self, grad):
        (a,) = self.saved
        xp = backend.get_array_module(grad)
        n = a.shape[-1]
        block = xp.zeros(a.shape[:-2] + (2 * n, 2 * n), dtype=a.dtype)
        block[..., :n, :n] = _mT(a)
        block[..., n:, n:] = _mT(a)
        block[..., :n, n:] = grad
        return _expm(block)[..., :n, n:]


def _expm(a: Any) -> Any:
    """exp of each matrix: float32 as torch's float32 kernel computes it (``_expm_float32``);
    other dtypes with SciPy's Pade approximation with scaling and squaring, on the host,
    computed in float64 and rounded once to the input's dtype."""
    import scipy.linalg  # noqa: PLC0415 - SciPy's linalg loads only when used
    host = backend.to_host(a)
    work = host.astype(np.float64)
    if work.size == 0:
        out = work.copy()
    elif host.dtype == np.float32:
        out = _expm_float32(host)
    else:
        out = scipy.linalg.expm(work)
    return backend.to_device(np.ascontiguousarray(out.astype(host.dtype)),
                             backend.device_of(a))


# torch's float32 matrix_exp (Bader, Blanes and Casas 2019, "Computing the matrix exponential
# with an optimized Taylor polynomial approximation"): the 1-norm picks the degree 1, 2, 4, 8,
# 12 or 18 whose bound it is under; above the degree-12 bound, degree 18 with the matrix scaled
# by 2^-s to a norm under 3.01, then squared s times
_EXPM_BOUNDS_F32 = (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02,
                    5.800524627688768e-01, 1.461661507209034e+00, 3.010066362817634e+00)
_SQRT_177 = 0.1330413469565007072504e+2
_EXPM_T12 = ((9.0198e-16, 0.46932117595418237389, -0.20099424927047284052,
              -0.04623946134063071740),
             (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031,
              0.01108844528519167989),
             (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968,
              0.00610700528898058230),
             (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079,
              -0.00675951846863086359))
_EXPM_T18 = ((0., -1.00365581030144618291e-01, -8.02924648241156932449e-03,
              -8.92138498045729985177e-04, 0.),
             (0., 3.97849749499645077844e-01, 1.36783778460411720168e+00,
              4.98289622525382669416e-01, -6.37898194594723280150e-04),
             (-1.09676396052962061844e+01, 1.68015813878906206114e+00,
              5.71779846478865511061e-02, -6.98210122488052056106e-03,
              3.34975017086070470649e-05),
             (-9.04316832390810593223e-02, -6.76404519071381882256e-02,
              6.75961301770459654925e-02, 2.95552570429315521194e-02,
              -1.39180257516060693404e-05),
             (0., 0., -9.23364619367118555360e-02, -1.69364939002081722752e-02,
              -1.40086798182036094347e-05))


def _mm_in_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b with the inner index summed in order, each product and sum rounded to float32
    (torch's order for small float32 matrices; a BLAS blocks the sums its own way)."""
    out = np.zeros(a.shape[:-1] + b.shape[-1:], dtype=np.float32)
    for k in range(a.shape[-1]):
        out = out + a[..., :, k:k + 1] * b[..., k:k + 1, :]
    return out


def _combine(powers: list, coefficients: Sequence[Sequence[float]]) -> list:
    """sum_j c[i][j] * powers[j] for each row i, the terms added in order in float32."""
    rows = []
    for row in coefficients:
        total = np.zeros_like(powers[0])
        for c, power in zip(row, powers):
            total = total + np.float32(c) * power
        rows.append(total)
    return rows


def _powers(a: np.ndarray, count: int) -> list:
    """I, A, A^2, A^3, A^6: the first ``count``."""
    eye = np.broadcast_to(np.eye(a.shape[-1], dtype=np.float32), a.shape).copy()
    out = [eye, a]
    if count > 2:
        out.append(_mm_in_order(a, a))
    if count > 3:
        out.append(_mm_in_order(a, out[2]))
    if count > 4:
        out.append(_mm_in_order(out[3], out[3]))
    return out


def _taylor(a: np.ndarray, degree: int) -> np.ndarray:
    """torch's degree-``degree`` polynomial for exp(a) (a float32 batch)."""
    if degree == 1:
        eye, a1 = _powers(a, 2)
        return eye + a1
    if degree == 2:
        eye, a1, a2 = _powers(a, 3)
        return eye + a1 + a2 / np.float32(2)
    if degree == 4:          # I + A + A^2 (I/2 + A/6 + A^2/24)
        eye, a1, a2 = _powers(a, 3)
        tail = _mm_in_order(a2, _combine([eye, a1, a2], [(1 / 2.0, 1 / 6.0, 1 / 24.0)])[0])
        return _combine([eye, a1, a2, tail], [(1.0, 1.0, 0.0, 1.0)])[0]
    if degree == 8:
        r = _SQRT_177
        x3 = 2.0 / 3.0
        x1, x2 = x3 * ((1.0 + r) / 88.0), x3 * ((1.0 + r) / 352.0)
        x4, x5 = (-271.0 + 29.0 * r) / (315.0 * x3), (-11.0 + 11.0 * r) / (1260.0 * x3)
        x6, x7 = (-99.0 + 11.0 * r) / (5040.0 * x3), (89.0 - r) / (5040.0 * x3)
        y2 = (857.0 - 58.0 * r) / 630.0
        x1, x2, x3, x4, x5, x6, x7, y2 = (float(np.float32(v))
                                          for v in (x1, x2, x3, x4, x5, x6, x7, y2))
        eye, a1, a2 = _powers(a, 3)
        a4 = _mm_in_order(a2, _combine([a1, a2], [(x1, x2)])[0])
        a8 = _mm_in_order(_combine([a2, a4], [(x3, 1.0)])[0],
                          _combine([eye, a1, a2, a4], [(x4, x5, x6, x7)])[0])
        return _combine([eye, a1, a2, a4, a8], [(1.0, 1.0, y2, 0.0, 1.0)])[0]
    if degree == 12:
        b = _combine(_powers(a, 4), _EXPM_T12)
        b[2] = b[2] + _mm_in_order(b[3], b[3])
        return b[0] + _mm_in_order(b[1] + b[2], b[2])
    b = _combine(_powers(a, 5), _EXPM_T18)
    b[3] = b[3] + _mm_in_order(b[0], b[4])
    return b[1] + _mm_in_order(b[2] + b[3], b[3])


def _expm_float32(a: np.ndarray) -> np.ndarray:
    """exp of each float32 matrix as torch's float32 kernel computes it (its degree choice,
    polynomials, scaling and squaring, every step in float32: on op_db's samples bit for bit
    against torch 2.13). A 1 x 1 matrix is exp of its entry."""
    n = a.shape[-1]
    if n == 1:
        return np.exp(a)
    batch = a.reshape(-1, n, n).astype(np.float32)
    out = np.empty_like(batch)
    bounds = [np.float32(t) for t in _EXPM_BOUNDS_F32]
    norm = np.abs(batch).sum(-2).max(-1)
    for i, degree in enumerate((1, 2, 4, 8, 12)):
        low = np.float32(-1) if i == 0 else bounds[i - 1]
        pick = (low < norm) & (norm <= bounds[i])
        if pick.any():
            out[pick] = _taylor(batch[pick], degree)
    large = (norm >= bounds[4]) | np.isnan(norm)      # NaN: torch leaves the memory unset
    if large.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            steps = np.ceil(np.log2(norm[large] / bounds[5]))
        steps = np.nan_to_num(np.maximum(0, steps), nan=0.0, posinf=0.0).astype(np.int64)
        scaled = batch[large] / (np.float32(2) ** steps.astype(np.float32))[:, None, None]
        result = _taylor(scaled, 18)
        for i, count in enumerate(steps):
            for _ in range(int(count)):
                result[i] = _mm_in_order(result[i], result[i])
        out[large] = result
    return out.reshape(a.shape)


def matrix_exp(A: Tensor) -> Tensor:  # noqa: N803 - torch's name
    """exp(A) of a square matrix or a batch (``torch.linalg.matrix_exp``,
    ``torch.matrix_exp``); float16 and bfloat16 too, as torch's CPU kernel."""
    if not isinstance(A, Tensor) or A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        shape = getattr(A, "shape", ())
        raise RuntimeError(f"linalg.matrix_exp: A must be batches of square matrices, but "
                           f"they are {shape[-2] if len(shape) > 1 else '?'} by "
                           f"{shape[-1] if shape else '?'} matrices")
    if not is_floating(A.dtype):
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor "
                           f"as input. Got {A.dtype.name.capitalize()}")
    return MatrixExp.apply(A)


# ------------------------------------------------------------------ compositions
_TORCH_NAMES = {"bool": "Bool", "float16": "Half", "bfloat16": "BFloat16"}


def cond(A: Tensor, p: Any = None) -> Tensor:  # noqa: N803 - torch's names
    """The condition number (``torch.linalg.cond``): p None or 2: s_max / s_min, -2:
    s_min / s_max (any shape, through svdvals); "fro", "nuc", inf, -inf, 1, -1:
    norm(A) * norm(A^-1) for square A, inf where A is singular (as torch)."""
    from .linalg_ops import inv, svdvals  # noqa: PLC0415 - same layer, avoids a cycle
    (A,) = cast_args("linalg_cond", A)
    check_matrix(A, "linalg.cond", "linalg_svd_cpu")
    if p is None or p == 2 or p == -2:
        s = svdvals(A)
        big, small = s[..., 0], s[..., -1]
        return small / big if p == -2 else big / small
    if p not in ("fro", "nuc", float("inf"), float("-inf"), 1, -1):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    check_square(A, f"linalg.cond(ord={p})", "linalg_svd_cpu")
    if p == "nuc":                                  # as torch: sum(s) * sum(1 / s)
        s = svdvals(A)
        return s.sum(-1) * (1 / s).sum(-1)
    xp = backend.get_array_module(A._data)
    singular = _exactly_singular(xp, A._data)
    if bool(xp.any(singular)):
        safe = A + Tensor._wrap(xp.where(singular[..., None, None],
                                         xp.eye(A.shape[-1], dtype=A.dtype), 0))
        value = _matrix_norm(A, p) * _matrix_norm(inv(safe), p)
        return value.masked_fill(Tensor._wrap(singular), float("inf"))
    return _matrix_norm(A, p) * _matrix_norm(inv(A), p)


def _exactly_singular(xp: Any, a: Any) -> Any:
    """Per matrix: does LU meet an exactly zero pivot (torch's test, through inv_ex's info)?"""
    try:
        xp.linalg.inv(a)
        return xp.zeros(a.shape[:-2], dtype=bool)
    except np.linalg.LinAlgError:
        pass
    flat = a.reshape((-1,) + a.shape[-2:])
    found = np.zeros(flat.shape[0], dtype=bool)
    for i, matrix in enumerate(flat):
        try:
            xp.linalg.inv(matrix)
        except np.linalg.LinAlgError:
            found[i] = True
    return xp.asarray(found.reshape(a.shape[:-2]))


def _matrix_norm(a: Tensor, p: Any) -> Tensor:
    if p == "fro":
        return (a * a).sum((-2, -1)).sqrt()
    along = -1 if abs(p) == float("inf") else -2        # rows for inf, columns for 1
    sums = a.abs().sum(along)
    return sums.amax(-1) if p > 0 else sums.amin(-1)


def vander(x: Tensor, N: Optional[int] = None) -> Tensor:  # noqa: N803 - torch's names
    """The Vandermonde matrix (``torch.linalg.vander``): columns x^0, x^1, ..., x^(N-1) for
    x (..., n), N = n by default; built from cumprod, whose gradient is exact at x = 0."""
    from .. import ops  # noqa: PLC0415 - the package's composed ops, same layer
    name = np.dtype(x.dtype).name
    if name in ("bool", "float16", "bfloat16"):
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer "
                           f"tensors, but got {_TORCH_NAMES.get(name, name)}")
    if x.ndim == 0:
        x = x.reshape(1)                                # torch reads a 0-d x as (1,)
    n = x.shape[-1] if N is None else int(N)
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    if not is_floating(x.dtype) and not is_complex_dtype(x.dtype):
        x = x.to("int64")                               # as torch's cumprod of integers
    xp = backend.get_array_module(x._data)
    powers = ops.cumprod(x.unsqueeze(-1).expand(*x.shape, n - 1), -1)   # x^1 ... x^(N-1)
    ones = Tensor._wrap(xp.ones(x.shape + (1,), dtype=x.dtype))
    return ops.cat([ones, powers], -1)
