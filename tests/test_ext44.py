"""Calls torch 2.13 refuses are refused here too, with torch's exception type (before, each was
computed: integer/bool loss operands promoted to float, tensors taken as flags, sizes,
fill values or tolerances, complex isin searched). Each case runs in both libraries; a
negative control runs the valid float form and compares values, so a blanket refusal fails."""
import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="torch is the reference for these refusals")

F, TF = ta.nn.functional, torch.nn.functional
_rng = np.random.default_rng(44)
R = _rng.standard_normal((3, 4)).astype(np.float32)
RI = _rng.integers(0, 3, (3, 4)).astype(np.int64)
SQ = _rng.standard_normal((3, 3)).astype(np.float32)
CZ = (R + 1j * R).astype(np.complex64)


def _t(lib, x):
    x = np.array(x)
    return torch.from_numpy(x.copy()) if lib == "torch" else ta.tensor(x.copy())


def _mods(lib):
    return (torch, TF) if lib == "torch" else (ta, F)


# name -> call(lib): each is refused by torch 2.13 (checked in the test itself)
REFUSED = {
    "kl_div_int_input": lambda m, f, c: f.kl_div(c(RI), c(R), reduction="sum"),
    "kl_div_int_target": lambda m, f, c: f.kl_div(c(R), c(RI), reduction="sum"),
    "kl_div_bool_input": lambda m, f, c: f.kl_div(c(RI > 0), c(R), reduction="sum"),
    "l1_loss_bool_target": lambda m, f, c: f.l1_loss(c(R), c(RI > 0)),
    "l1_loss_bool_input": lambda m, f, c: f.l1_loss(c(RI > 0), c(R)),
    "huber_int_input": lambda m, f, c: f.huber_loss(c(RI), c(R)),
    "huber_bool_input": lambda m, f, c: f.huber_loss(c(RI > 0), c(R)),
    "soft_margin_int_input": lambda m, f, c: f.soft_margin_loss(c(RI), c(R)),
    "cross_entropy_int_input_prob": lambda m, f, c: f.cross_entropy(c(RI), c(R)),
    "cross_entropy_int_input_index": lambda m, f, c: f.cross_entropy(c(RI), c(RI[:, 0])),
    "cross_entropy_bool_input": lambda m, f, c: f.cross_entropy(c(RI > 0), c(R)),
    "multilabel_soft_margin_int_input":
        lambda m, f, c: f.multilabel_soft_margin_loss(c(RI), c(R)),
    "multilabel_soft_margin_bool_target":
        lambda m, f, c: f.multilabel_soft_margin_loss(c(R), c(RI > 0)),
    "isin_complex_both": lambda m, f, c: m.isin(c(CZ), c(CZ)),
    "isin_complex_elements": lambda m, f, c: m.isin(c(CZ), c(R)),
    "isin_complex_scalar": lambda m, f, c: m.isin(c(R), 1 + 0j),
    "stack_tensor": lambda m, f, c: m.stack(c(R)),
    "unique_sorted_tensor": lambda m, f, c: m.unique(c(R), sorted=c(np.array(True))),
    "unique_return_counts_int": lambda m, f, c: m.unique(c(R), return_counts=1),
    "view_copy_tensor_size": lambda m, f, c: m.view_copy(c(R), c(np.array([4, 3]))),
    "view_copy_0d_tensor": lambda m, f, c: m.view_copy(c(R), c(np.array(12))),
    "nan_to_num_tensor": lambda m, f, c: m.nan_to_num(c(R), c(R)),
    "nan_to_num_posinf_tensor": lambda m, f, c: m.nan_to_num(c(R), posinf=c(R[0])),
    "nan_to_num_int_input_tensor": lambda m, f, c: m.nan_to_num(c(RI), c(R)),
    "nan_to_num_complex": lambda m, f, c: m.nan_to_num(c(R), 1 + 0j),
    "pinverse_tensor_rcond": lambda m, f, c: m.pinverse(c(SQ), c(R)),
    "pinverse_complex_rcond": lambda m, f, c: m.pinverse(c(SQ), 0.1 + 0j),
    "pinv_complex_rcond": lambda m, f, c: m.linalg.pinv(c(SQ), 0.1 + 0j),
    "pinv_complex_tensor_rcond": lambda m, f, c: m.linalg.pinv(c(SQ), c(np.complex64(0.1))),
    "pinv_complex_atol": lambda m, f, c: m.linalg.pinv(c(SQ), atol=0.1 + 0j),
    "pinv_complex_tensor_atol":
        lambda m, f, c: m.linalg.pinv(c(SQ), atol=c(np.complex64(0.1))),
    "matrix_rank_complex_atol": lambda m, f, c: m.linalg.matrix_rank(c(SQ), atol=0.1 + 0j),
    "matrix_rank_complex_rtol": lambda m, f, c: m.linalg.matrix_rank(c(SQ), rtol=0.1 + 0j),
    "matrix_rank_complex_tol": lambda m, f, c: m.linalg.matrix_rank(c(SQ), 0.1 + 0j),
    "matrix_rank_complex_tensor_atol":
        lambda m, f, c: m.linalg.matrix_rank(c(SQ), atol=c(np.complex64(0.1))),
}


def _call(case, lib):
    m, f = _mods(lib)
    return case(m, f, lambda x: _t(lib, x))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_as_torch(name):
    with pytest.raises(Exception) as torch_err:
        _call(REFUSED[name], "torch")
    with pytest.raises(Exception) as ours:
        _call(REFUSED[name], "ta")
    assert type(ours.value) is type(torch_err.value), (ours.value, torch_err.value)
    # torch's text leads the message (the ones written for this refusal are torch's words;
    # an older refusal in sub() words it its own way)
    if isinstance(torch_err.value, RuntimeError) and not name.startswith(
            ("pinv", "matrix", "multilabel_soft_margin_bool")):
        assert str(ours.value).startswith(str(torch_err.value).split("\n")[0][:40])


# the same ops with operands torch accepts: still computed, and equal to torch
ACCEPTED = {
    "kl_div_float": lambda m, f, c: f.kl_div(c(R), c(np.abs(R)), reduction="sum"),
    "l1_loss_float": lambda m, f, c: f.l1_loss(c(R), c(R[::-1])),
    "l1_loss_int_input_float_target": lambda m, f, c: f.l1_loss(c(RI), c(R)),
    "mse_bool_target": lambda m, f, c: f.mse_loss(c(R), c(RI > 0)),
    "huber_int_target": lambda m, f, c: f.huber_loss(c(R), c(RI)),
    "smooth_l1_int_input": lambda m, f, c: f.smooth_l1_loss(c(RI), c(R)),
    "soft_margin_int_target": lambda m, f, c: f.soft_margin_loss(c(R), c(RI)),
    "cross_entropy_float": lambda m, f, c: f.cross_entropy(c(R), c(RI[:, 0])),
    "multilabel_soft_margin_float":
        lambda m, f, c: f.multilabel_soft_margin_loss(c(R), c((RI > 0).astype(np.float32))),
    "isin_real": lambda m, f, c: m.isin(c(RI), c(np.array([1, 2]))),
    "stack_list": lambda m, f, c: m.stack([c(R), c(R)]),
    "unique_bool_flags": lambda m, f, c: m.unique(c(RI), sorted=True),
    "view_copy_size": lambda m, f, c: m.view_copy(c(R), [4, 3]),
    "nan_to_num_0d_tensor": lambda m, f, c: m.nan_to_num(
        c(np.array([np.nan, 1.0], np.float32)), c(np.array(2.5))),
    "nan_to_num_bool_value": lambda m, f, c: m.nan_to_num(
        c(np.array([np.nan, 1.0], np.float32)), True),
    "pinverse_0d_rcond": lambda m, f, c: m.pinverse(c(SQ), c(np.array(0.1))),
    "pinverse_float_rcond": lambda m, f, c: m.pinverse(c(SQ), 0.1),
    "pinv_real_tensor_atol": lambda m, f, c: m.linalg.pinv(c(SQ), atol=c(np.float32(0.5))),
    "matrix_rank_real_atol": lambda m, f, c: m.linalg.matrix_rank(c(SQ), atol=0.5),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_valid_form_still_agrees(name):
    want = _call(ACCEPTED[name], "torch")
    got = _call(ACCEPTED[name], "ta")
    want = want.detach().numpy()
    got = np.asarray(got.detach().numpy())
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["tensor", "as_tensor"])
def test_dtype_is_keyword_only_as_torchs(name):
    """torch.tensor(data, dtype) with a positional second argument is a TypeError in torch;
    tinyattn read it as the dtype (a list there gave NumPy's 'Field elements' error)."""
    for second in ([3.0, 4.0], "float64"):
        messages = []
        for lib in (torch, ta):
            with pytest.raises(TypeError) as caught:
                getattr(lib, name)([1.0, 2.0], second)
            messages.append(str(caught.value))
        assert messages[0] == messages[1]
    ours = getattr(ta, name)([1.0, 2.0], dtype=ta.float64)          # the keyword still works
    assert str(ours.dtype) == "float64"
