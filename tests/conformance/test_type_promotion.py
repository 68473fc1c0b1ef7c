"""tinyattn's type promotion against torch's, over op_db's elementwise ops
(promotion_cases.py says how). Skipped without torch or expecttest (CI installs both)."""
import pytest

pytest.importorskip("torch", reason="the conformance harness compares with torch")
pytest.importorskip("expecttest", reason="torch's test database needs expecttest")

import tinyattn  # noqa: E402

from .promotion_cases import PromotionCase, compare, promotion_cases  # noqa: E402

CASES = promotion_cases()


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_promotion(case):
    problem = compare(case)
    assert not problem, f"{case.id}: {problem}"


def test_every_elementwise_family_is_drawn():
    """The sample covers binary ops with numbers on both sides and unary ops on 0-d."""
    ops = {c.op for c in CASES}
    assert {"add", "mul", "true_divide", "atan2", "pow", "exp", "sin", "where"} <= ops
    assert any(c.operands[0][0] == "number" for c in CASES)
    assert {"Tensor.add_", "Tensor.mul_", "Tensor.sub_"} <= ops
    assert any(len(c.operands) == 1 and c.operands[0][2] for c in CASES)


def test_negative_control_numpy_promotion_is_caught():
    """NumPy's own rule (int32 + a 0-d int64 is int64; int64 + float32 is float64) must be
    seen as a disagreement: what tinyattn did before it followed torch."""
    def numpy_add(a, b):
        return tinyattn.Tensor._wrap(a.data + (b.data if hasattr(b, "data") else b))
    import torch
    widened = PromotionCase("add", (("tensor", torch.int32, False), ("tensor", torch.int64,
                                                                     True)))
    assert "dtype int64 where torch gives int32" in compare(widened, numpy_add)
    float64 = PromotionCase("add", (("tensor", torch.int64, False), ("tensor", torch.float32,
                                                                     False)))
    assert "dtype float64 where torch gives float32" in compare(float64, numpy_add)


DTYPE_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
               "float32", "float64")


def test_promote_types_and_can_cast_as_torch():
    import torch
    wrong = []
    for a in DTYPE_NAMES:
        for b in DTYPE_NAMES:
            ta_a, ta_b, t_a, t_b = (getattr(tinyattn, a), getattr(tinyattn, b),
                                    getattr(torch, a), getattr(torch, b))
            want = str(torch.promote_types(t_a, t_b)).replace("torch.", "")
            if str(tinyattn.promote_types(ta_a, ta_b)) != want:
                wrong.append(("promote_types", a, b))
            if tinyattn.can_cast(ta_a, ta_b) != torch.can_cast(t_a, t_b):
                wrong.append(("can_cast", a, b))
    assert not wrong


def test_result_type_as_torch():
    import torch
    for a in DTYPE_NAMES:
        for b in DTYPE_NAMES:
            for second in (lambda lib, d: lib.tensor(1, dtype=getattr(lib, d)),
                           lambda lib, d: lib.tensor([1, 0], dtype=getattr(lib, d))):
                want = torch.result_type(torch.tensor([1, 0], dtype=getattr(torch, a)),
                                         second(torch, b))
                got = tinyattn.result_type(tinyattn.tensor([1, 0], dtype=getattr(tinyattn, a)),
                                           second(tinyattn, b))
                assert str(got) == str(want).replace("torch.", ""), (a, b)
        for number in (2, 2.5, True):
            want = torch.result_type(torch.tensor([1, 0], dtype=getattr(torch, a)), number)
            got = tinyattn.result_type(tinyattn.tensor([1, 0], dtype=getattr(tinyattn, a)),
                                       number)
            assert str(got) == str(want).replace("torch.", ""), (a, number)
