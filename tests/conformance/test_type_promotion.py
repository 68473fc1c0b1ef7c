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
