"""Comparisons convert both operands to torch's result type first, then compare.

torch compares ``uint8_tensor < -3`` against -3 converted to uint8 (253, as a C cast wraps),
a float16 tensor against a float number rounded to float16, an int64 tensor against a float16
one in float16. NumPy compares the exact values instead, which gave other answers. The
expected values below are torch 2.x's (checked against torch too when it is installed)."""
import operator

import numpy as np
import pytest

import tinyattn as ta

U8 = np.array([1, 120, 250], dtype=np.uint8)
I8 = np.array([1, 120, -100], dtype=np.int8)

CASES = [                               # (array, op, number, torch's answer)
    (U8, "lt", -3, [True, True, True]),         # -3 -> 253
    (U8, "ge", -3, [False, False, False]),
    (U8, "lt", 300, [True, False, False]),      # 300 -> 44
    (U8, "eq", 2 ** 31, [False, False, False]),  # -> 0
    (U8, "ge", 2 ** 40, [True, True, True]),
    (I8, "lt", 200, [False, False, True]),      # 200 -> -56
    (I8, "gt", 300, [False, True, False]),      # 300 -> 44
    (np.array([2048.0, 0.1], dtype=np.float16), "eq", 2049, [True, False]),   # 2049 -> 2048
    (np.array([0.1], dtype=np.float16), "eq", 0.1, [True]),        # 0.1 rounded to float16
    (np.array([1.0], dtype=np.float16), "lt", 1e10, [True]),        # 1e10 -> inf
    (np.array([1, 3], dtype=np.int32), "lt", 2.5, [True, False]),   # a float stays a float
]


@pytest.mark.parametrize("form", ["function", "operator", "method"])
@pytest.mark.parametrize("array, op, number, want", CASES)
def test_number_converted_to_the_tensor_dtype(array, op, number, want, form):
    x = ta.tensor(array)
    call = {"function": getattr(ta, op), "operator": getattr(operator, op),
            "method": lambda a, b: getattr(a, op)(b)}[form]
    assert call(x, number).tolist() == want


def test_tensor_against_tensor_in_the_common_dtype():
    whole = ta.tensor(np.array([2049, 5, 70000]))
    half = ta.tensor(np.array([2048.0, 5.0, 65504.0], dtype=np.float16))
    assert (whole == half).tolist() == [True, True, False]     # 2049 -> 2048, 70000 -> inf
    assert ta.gt(whole, half).tolist() == [False, False, True]


def test_negative_control_numpy_compares_exactly():
    # the old behaviour: NumPy's exact comparison, which torch does not do
    assert (U8 < -3).tolist() == [False, False, False]


def test_against_torch():
    torch = pytest.importorskip("torch", reason="compares with torch")
    for array, op, number, _ in CASES:
        theirs = getattr(torch, op)(torch.from_numpy(array), number).tolist()
        assert getattr(ta, op)(ta.tensor(array), number).tolist() == theirs, (array, op, number)


def test_logic_operators_unchanged():
    mask = ta.tensor(np.array([True, False]))
    assert (mask & ta.tensor(np.array([True, True]))).tolist() == [True, False]


def test_number_with_number_is_a_0d_tensor():
    # torch.add(2, 3.5) wraps the first number as a 0-d tensor: float32 (the default float)
    for fn, a, b, value, dtype in [(ta.add, 2, 3.5, 5.5, np.float32), (ta.add, 2, 3, 5, np.int64),
                                   (ta.mul, True, True, True, np.bool_),
                                   (ta.div, 2, 4, 0.5, np.float32),
                                   (ta.sub, 2.5, 1, 1.5, np.float32)]:
        out = fn(a, b)
        assert isinstance(out, ta.Tensor) and out.ndim == 0
        assert out.item() == value and out.dtype == dtype
    assert ta.add(2, 3, alpha=2).item() == 8
    with pytest.raises(RuntimeError, match="bool"):
        ta.sub(True, True)
