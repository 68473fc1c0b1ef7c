"""Matrix decompositions with hand-derived backwards (docs/derivations.md#matrix-decompositions):
Cholesky (torch.linalg.cholesky, cholesky_ex, torch.cholesky), QR (linalg.qr), the symmetric
eigendecomposition (linalg.eigh) and the SVD (linalg.svd, torch.svd). Each takes a matrix or a
batch of them (..., m, n); NumPy's (CuPy's) linalg computes the values.

An op with several outputs (Q and R, eigenvalues and eigenvectors, U, S and Vh) is one
``Function`` whose output packs them side by side along the last axis, each flattened; the
tensors handed back are views of that packed output (``_split``). So they share one
``grad_fn`` and one saved state, as torch's, and the backward sees the gradients of all of
them at once (zero for an output the loss does not use).
"""
from __future__ import annotations

from typing import Any, List, Sequence, Tuple

import numpy as np

from .. import backend
from ..amp.dispatch import cast_args
from ..autograd import Function, name_node
from ..precision import is_floating
from ..tensor import Tensor
from .return_types import return_type

__all__ = ["LinAlgError", "converged", "cholesky", "cholesky_ex", "cholesky_older_name",
           "qr", "eigh", "svd", "svd_older_name", "check_matrix", "check_square"]

CholeskyExResult = return_type("linalg_cholesky_ex", ["L", "info"])
QRResult = return_type("linalg_qr", ["Q", "R"])
EighResult = return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
SVDResult = return_type("linalg_svd", ["U", "S", "Vh"])
OlderSVDResult = return_type("svd", ["U", "S", "V"])


class LinAlgError(RuntimeError):
    """``torch.linalg.LinAlgError``: a decomposition that cannot be computed (a matrix that is
    not positive-definite, a singular matrix); a RuntimeError, as torch's."""


def _mT(a: Any) -> Any:
    return backend.get_array_module(a).swapaxes(a, -1, -2)


def converged(op: str, what: str, compute: Any, *args: Any, **kwargs: Any) -> Any:
    """``compute(*args, **kwargs)`` (an eigen- or singular value solver), with LAPACK's failure
    to converge (NaN or inf input) raised as torch raises it: a LinAlgError."""
    try:
        return compute(*args, **kwargs)
    except np.linalg.LinAlgError:
        raise LinAlgError(f"{op}: The algorithm failed to converge because the input matrix is "
                          f"ill-conditioned or has too many repeated {what} (as torch; check "
                          f"the input for NaN or inf)") from None


_TORCH_DTYPE_NAMES = {"float16": "Half", "bfloat16": "BFloat16"}


def check_matrix(a: Tensor, op: str, kernel: str) -> None:
    """``a`` is a floating tensor of at least 2 dims in a dtype LAPACK takes (torch's errors);
    ``kernel`` names torch's CPU kernel in the half-precision error."""
    if not isinstance(a, Tensor):
        raise TypeError(f"{op}(): argument 'A' must be Tensor, not {type(a).__name__}")
    if a.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if not is_floating(a.dtype):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{a.dtype.name.capitalize()}")
    half = _TORCH_DTYPE_NAMES.get(np.dtype(a.dtype).name)
    if half is not None:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{half}\' (as torch on the '
                                  f"CPU); convert with .float() first")


def check_square(a: Tensor, op: str, kernel: str) -> None:
    check_matrix(a, op, kernel)
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")


# ------------------------------------------------------------------ packed outputs
def _pack(parts: Sequence[Any], batch: Tuple[int, ...]) -> Any:
    """The arrays side by side along one last axis, each flattened: (..., total)."""
    xp = backend.get_array_module(parts[0])
    flat = [p.reshape(batch + (int(np.prod(p.shape[len(batch):], dtype=np.int64)),))
            for p in parts]
    return xp.ascontiguousarray(xp.concatenate(flat, axis=-1))


def _split(packed: Any, batch: Tuple[int, ...], shapes: Sequence[Tuple[int, ...]]
           ) -> List[Any]:
    """``_pack``'s inverse: the parts of ``shapes`` (after the batch) out of ``packed``. On
    a packed output tensor it gives the output tensors, views of it (gradients flow back
    through them); in a backward it splits the packed gradient."""
    parts, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        part = packed[..., start:start + size].reshape(batch + tuple(shape))
        if isinstance(part, Tensor) and part.numel() == 0 and not part._is_view:
            part._share_memory_with(packed)     # an empty slice is a view too (one version)
        parts.append(part)
        start += size
    return parts


# ------------------------------------------------------------------ Cholesky
class Cholesky(Function):
    """L = chol(A), A = L L^T with L lower triangular (the lower triangle of A is read).
    From dA = dL L^T + L dL^T: L^-1 dA L^-T = Phi^-1(L^-1 dL) with Phi the lower triangle with
    its diagonal halved. The adjoint: P = tril(L^T g), P <- (P + tril(P, -1)^T) / 2
    (symmetric, diagonal halved), dA = L^-T P L^-1 (only L is kept, as torch)."""

    def forward(self, a, upper: bool):
        xp = backend.get_array_module(a)
        lower, info = _cholesky_lower(xp, a)
        if info is not None:
            raise LinAlgError(_not_pd_message("linalg.cholesky", info))
        out = xp.ascontiguousarray(_mT(lower)) if upper else lower
        self.save_for_backward(out, upper)              # L: as torch keeps it
        return out

    def backward(self, grad):
        out, upper = self.saved
        xp = backend.get_array_module(grad)
        lower, g = (_mT(out), _mT(grad)) if upper else (out, grad)
        p = xp.tril(_mT(lower) @ g)
        p = 0.5 * (p + _mT(xp.tril(p, -1)))
        inv_lower = xp.linalg.inv(lower) if lower.shape[-1] else lower
        return _mT(inv_lower) @ p @ inv_lower


def _cholesky_lower(xp: Any, a: Any, validate: bool = True) -> Tuple[Any, Any]:
    """(L, None) or (partial result, info): info is the order of the first leading minor that
    is not positive definite (1-based, per matrix; 0 where it is). ``validate=False``
    (cholesky_ex) returns info as a device array always, without reading it on the host."""
    try:
        lower = xp.asarray(xp.linalg.cholesky(a))
    except np.linalg.LinAlgError:
        lower = None
    if lower is not None:
        # a NaN in A: LAPACK's pivot test fails at the first NaN pivot, as in torch
        bad = xp.isnan(xp.diagonal(lower, axis1=-2, axis2=-1))
        if a.shape[-1] == 0:                            # 0 x 0 matrices: nothing can fail
            info = xp.zeros(a.shape[:-2], dtype=np.int32)
        else:
            info = xp.where(bad.any(-1), xp.argmax(bad, axis=-1) + 1, 0).astype(np.int32)
        if not validate:
            return lower, info
        return (lower, None) if not bool(bad.any()) else (lower, backend.to_host(info))
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    lower = xp.zeros_like(flat)
    info = np.zeros(flat.shape[0], dtype=np.int32)
    for i, matrix in enumerate(flat):
        try:
            lower[i] = xp.linalg.cholesky(matrix)
        except np.linalg.LinAlgError:
            info[i] = _first_bad_minor(xp, matrix)
    return lower.reshape(a.shape), info.reshape(batch)


def _first_bad_minor(xp: Any, matrix: Any) -> int:
    for k in range(1, matrix.shape[-1] + 1):
        try:
            xp.linalg.cholesky(matrix[:k, :k])
        except np.linalg.LinAlgError:
            return k
    return matrix.shape[-1]


def _not_pd_message(op: str, info: Any) -> str:
    flat = np.asarray(info).reshape(-1)
    bad = int(np.flatnonzero(flat)[0])
    where = f"(Batch element {bad}): " if np.asarray(info).ndim else ""
    return (f"{op}: {where}The factorization could not be completed because the input is not "
            f"positive-definite (the leading minor of order {int(flat[bad])} is not "
            f"positive-definite).")


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:  # noqa: N803 - torch's name
    """L with A = L L^T (``torch.linalg.cholesky``; ``upper=True``: U with A = U^T U).
    Raises ``LinAlgError`` where A is not positive-definite."""
    (A,) = cast_args("linalg_cholesky", A)      # float32 in CPU autocast, as torch's
    check_square(A, "linalg.cholesky", "cholesky_cpu")
    return name_node(Cholesky.apply(A, upper=bool(upper)), "LinalgCholeskyExBackward0")


class CholeskyEx(Cholesky):
    """Cholesky that reports failure in ``info`` instead of raising (torch.linalg.cholesky_ex):
    the same backward; where the factorization fails L holds what was computed."""

    def forward(self, a, upper: bool, report: list):
        xp = backend.get_array_module(a)
        lower, info = _cholesky_lower(xp, a, validate=False)
        report.append(info)
        out = xp.ascontiguousarray(_mT(lower)) if upper else lower
        self.save_for_backward(out, upper)
        return out


def cholesky_ex(A: Tensor, *, upper: bool = False,  # noqa: N803 - torch's names
                check_errors: bool = False) -> CholeskyExResult:
    """(L, info) (``torch.linalg.cholesky_ex``): info is 0 where A is positive-definite, else
    the order of its first leading minor that is not; ``check_errors=True`` raises there."""
    (A,) = cast_args("linalg_cholesky_ex", A)
    check_square(A, "linalg.cholesky_ex", "cholesky_cpu")
    report: list = []                   # forward puts info here
    out = CholeskyEx.apply(A, upper=bool(upper), report=report)
    info = report[0]
    if check_errors and bool(info.any()):           # reads info on the host, as torch
        info_host = backend.to_host(info)
        raise LinAlgError(_not_pd_message("linalg.cholesky_ex", info_host))
    if isinstance(info, np.ndarray):          # the host's per-matrix path (LAPACK refused)
        info = backend.to_device(info, A.device)
    return CholeskyExResult(out, Tensor._wrap(info))


def cholesky_older_name(input: Tensor, upper: bool = False) -> Tensor:  # noqa: A002
    """``torch.cholesky`` (deprecated in torch): ``linalg.cholesky`` with ``upper`` as a
    positional argument."""
    (input,) = cast_args("cholesky", input)
    check_square(input, "cholesky", "cholesky_cpu")
    return Cholesky.apply(input, upper=bool(upper))


# ------------------------------------------------------------------ QR
class QR(Function):
    """A = Q R (Q with orthonormal columns, R upper triangular); output packs [Q | R].
    m >= n (reduced): with M = R gR^T - gQ^T Q, dA = (gQ + Q copyltu(M)) R^-T, where
    copyltu(M) is the symmetric matrix with M's lower triangle. m < n: A = [X | Y],
    R = [U | V] with X = Q U square and V = Q^T Y: dY = Q gV, and X's gradient is the square
    case's with gQ + Y gV^T for gQ (Q and R are kept, as torch)."""

    def forward(self, a, mode: str):
        xp = backend.get_array_module(a)
        q, r = xp.linalg.qr(a, mode="complete" if mode == "complete" else "reduced")
        batch = a.shape[:-2]
        self.shapes = [q.shape[len(batch):], r.shape[len(batch):]]
        out = _pack([q, r], batch)
        self.save_for_backward(out, mode)               # Q and R: as torch keeps them
        return out

    def backward(self, grad):
        out, mode = self.saved
        q, r = _split(out, out.shape[:-1], self.shapes)
        m, n = q.shape[-2], r.shape[-1]
        if mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not "
                               "computed when mode='r'. Please use linalg.qr(A, "
                               "mode='reduced') if you are going to differentiate through "
                               "linalg.qr.")
        if mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when "
                               "mode='complete' and nrows > ncols.")
        gq, gr = _split(grad, out.shape[:-1], self.shapes)
        if m >= n:
            return _qr_tall_backward(q, r, gq, gr)
        x_r, v = r[..., :, :m], r[..., :, m:]
        y = q @ v
        gx = _qr_tall_backward(q, x_r, gq + y @ _mT(gr[..., :, m:]), gr[..., :, :m])
        return backend.get_array_module(grad).concatenate([gx, q @ gr[..., :, m:]], axis=-1)


def _qr_tall_backward(q: Any, r: Any, gq: Any, gr: Any) -> Any:
    xp = backend.get_array_module(q)
    m_sym = r @ _mT(gr) - _mT(gq) @ q
    lower = xp.tril(m_sym, -1)
    copyltu = lower + _mT(lower) + xp.tril(xp.triu(m_sym))      # the diagonal kept once
    lhs = gq + q @ copyltu                                      # (..., m, n)
    if r.shape[-1] == 0:
        return lhs
    return _mT(xp.linalg.solve(r, _mT(lhs)))                    # lhs R^-T


def qr(A: Tensor, mode: str = "reduced") -> QRResult:  # noqa: N803 - torch's name
    """(Q, R) with A = Q R (``torch.linalg.qr``): mode "reduced" (Q (m, k), R (k, n),
    k = min(m, n)), "complete" (Q (m, m), R (m, n)) or "r" (R only; Q is empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    (A,) = cast_args("linalg_qr", A)
    check_matrix(A, "linalg.qr", "geqrf_cpu")
    packed = QR.apply(A, mode=mode)
    batch = tuple(A.shape[:-2])
    m, n = A.shape[-2], A.shape[-1]
    k = m if mode == "complete" else min(m, n)
    q, r = _split(packed, batch, [(m, k), (k, n)])
    if mode == "r":
        q = Tensor._wrap(backend.get_array_module(A._data).zeros((0,), dtype=A.dtype))
    return QRResult(*(name_node(t, "LinalgQrBackward0") for t in (q, r)))   # torch: one node


# ------------------------------------------------------------------ eigh
class Eigh(Function):
    """A = V diag(w) V^T for symmetric A (the lower triangle read, or the upper with UPLO="U");
    output packs [w | V]. With E_ij = w_j - w_i (1 on the diagonal) and
    skew(X) = (X - X^T) / 2: dA = V (skew(V^T gV) / E + diag(gw)) V^T, a symmetric matrix
    (distinct eigenvalues needed; w and V are kept, as torch)."""

    def forward(self, a, uplo: str):
        xp = backend.get_array_module(a)
        w, v = converged("linalg.eigh", "eigenvalues", xp.linalg.eigh, a, UPLO=uplo)
        out = _pack([w, v], a.shape[:-2])
        self.n = a.shape[-1]
        self.save_for_backward(out)                     # w and V: as torch keeps them
        return out

    def backward(self, grad):
        (out,) = self.saved
        batch = out.shape[:-1]
        n = self.n
        w, v = _split(out, batch, [(n,), (n, n)])
        gw, gv = _split(grad, batch, [(n,), (n, n)])
        vt_gv = _mT(v) @ gv
        xp = backend.get_array_module(grad)
        idx = xp.arange(n)
        gap = w[..., None, :] - w[..., :, None]
        gap[..., idx, idx] = 1          # repeated eigenvalues divide by 0 (inf), as torch
        with np.errstate(divide="ignore", invalid="ignore"):
            middle = 0.5 * (vt_gv - _mT(vt_gv)) / gap
        middle[..., idx, idx] = gw
        return v @ middle @ _mT(v)


def eigh(A: Tensor, UPLO: str = "L") -> EighResult:  # noqa: N803 - torch's names
    """(eigenvalues ascending, eigenvectors as columns) of a symmetric matrix
    (``torch.linalg.eigh``). Each eigenvector's sign is arbitrary, as in torch."""
    (A,) = cast_args("linalg_eigh", A)
    check_square(A, "linalg.eigh", "linalg_eigh_cpu")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    n = A.shape[-1]
    w, v = _split(Eigh.apply(A, uplo=UPLO), tuple(A.shape[:-2]), [(n,), (n, n)])
    return EighResult(*(name_node(t, "LinalgEighBackward0") for t in (w, v)))


# ------------------------------------------------------------------ SVD
class SVD(Function):
    """A = U diag(s) Vh; output packs [U | s | Vh] (full_matrices: U (m, m), Vh (n, n)).
    Reduced, k = min(m, n), distinct nonzero s, E_jk = s_k^2 - s_j^2 (1 on the diagonal),
    skew(X) = X - X^T: dA = U [(skew(U^T gU) S + S skew(V^T gV)) / E + diag(gs)] Vh
    + (I - U U^T) gU S^-1 Vh (m > n) or + U S^-1 gVh (I - V V^T) (m < n). With full matrices
    only the first k columns of U and rows of Vh enter (the rest are not unique), as torch."""

    def forward(self, a, full_matrices: bool):
        xp = backend.get_array_module(a)
        u, s, vh = converged("linalg.svd", "singular values", xp.linalg.svd, a,
                             full_matrices=full_matrices)
        batch = a.shape[:-2]
        self.shapes = [u.shape[len(batch):], s.shape[len(batch):], vh.shape[len(batch):]]
        out = _pack([u, s, vh], batch)
        self.save_for_backward(out)                     # U, S and Vh: as torch keeps them
        return out

    def backward(self, grad):
        (out,) = self.saved
        batch = out.shape[:-1]
        u, s, vh = _split(out, batch, self.shapes)
        k = s.shape[-1]
        gu, gs, gvh = _split(grad, batch, self.shapes)
        return svd_backward(u[..., :, :k], s, vh[..., :k, :], gu[..., :, :k], gs,
                            gvh[..., :k, :])


def svd_backward(u: Any, s: Any, vh: Any, gu: Any, gs: Any, gvh: Any) -> Any:
    """dA of the reduced SVD (SVD's docstring; docs/derivations.md#matrix-decompositions)."""
    m, n = u.shape[-2], vh.shape[-1]
    v, gv = _mT(vh), _mT(gvh)
    ut_gu, vt_gv = _mT(u) @ gu, _mT(v) @ gv
    skew_u, skew_v = ut_gu - _mT(ut_gu), vt_gv - _mT(vt_gv)
    s2 = s * s
    idx = backend.get_array_module(s).arange(s.shape[-1])
    gap = s2[..., None, :] - s2[..., :, None]
    gap[..., idx, idx] = 1              # repeated singular values divide by 0, as torch
    with np.errstate(divide="ignore", invalid="ignore"):
        middle = (skew_u * s[..., None, :] + s[..., :, None] * skew_v) / gap
    middle[..., idx, idx] += gs
    if m > n:
        gu_sinv = gu / s[..., None, :]
        return (u @ middle + gu_sinv - u @ (_mT(u) @ gu_sinv)) @ vh
    if m < n:
        sinv_gvh = gvh / s[..., :, None]
        return u @ (middle @ vh + sinv_gvh - (sinv_gvh @ v) @ vh)
    return u @ middle @ vh


def svd(A: Tensor, full_matrices: bool = True, *,  # noqa: N803 - torch's names
        driver: Any = None) -> SVDResult:
    """(U, S, Vh) with A = U diag(S) Vh, S descending (``torch.linalg.svd``); full_matrices
    gives U (m, m) and Vh (n, n). Singular vectors' signs are arbitrary, as in torch.
    ``driver`` is for CUDA in torch (None required on the CPU)."""
    (A,) = cast_args("linalg_svd", A)
    check_matrix(A, "linalg.svd", "linalg_svd_cpu")
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    shapes = [(m, m), (k,), (n, n)] if full_matrices else [(m, k), (k,), (k, n)]
    u, s, vh = _split(SVD.apply(A, full_matrices=bool(full_matrices)), tuple(A.shape[:-2]),
                       shapes)
    return SVDResult(*(name_node(t, "LinalgSvdBackward0") for t in (u, s, vh)))


def svd_older_name(input: Tensor, some: bool = True,  # noqa: A002 - torch's names
                   compute_uv: bool = True) -> OlderSVDResult:
    """``torch.svd`` (deprecated in torch): (U, S, V) with V, not Vh; ``some=False`` gives
    the full matrices; ``compute_uv=False`` gives zero U (m, m) and V (n, n)."""
    (input,) = cast_args("svd", input)
    check_matrix(input, "linalg.svd", "linalg_svd_cpu")
    if not compute_uv:
        s = svd(input, full_matrices=False).S
        xp = backend.get_array_module(input._data)
        batch = tuple(input.shape[:-2])
        m, n = input.shape[-2], input.shape[-1]
        return OlderSVDResult(Tensor._wrap(xp.zeros(batch + (m, m), dtype=input.dtype)), s,
                              Tensor._wrap(xp.zeros(batch + (n, n), dtype=input.dtype)))
    u, s, vh = svd(input, full_matrices=not some)
    return OlderSVDResult(u, s, name_node(vh.mT, "LinalgSvdBackward0"))
