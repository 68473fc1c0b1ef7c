"""tinyattn against torch's OpInfo database (op_db): values, gradients, errors, saves.

Every op_db entry tinyattn has by torch's name is run here (op_cases.py says how); the
cases the harness does not compare are rows of the skip table (skips.py), each with its
reason. Skipped without torch or expecttest (CI installs both)."""
import pytest

pytest.importorskip("torch", reason="the conformance harness compares with torch")
pytest.importorskip("expecttest", reason="torch's test database needs expecttest")

from .op_cases import marks_for, op_cases, run_op_case  # noqa: E402

CASES = op_cases()


@pytest.mark.parametrize("case", [pytest.param(c, marks=marks_for(c), id=c.id)
                                  for c in CASES])
def test_op(case):
    run_op_case(case)


def test_new_checks_are_not_vacuous():
    """Negative controls of the str() and out= comparisons (harness39)."""
    import torch
    import tinyattn
    from . import op_runner as R
    assert R._printed_differently(tinyattn.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0001])) \
        is None
    assert "str(result)" in R._printed_differently(tinyattn.tensor([], dtype="int32"),
                                                   torch.tensor([], dtype=torch.int64))
    sample = type("S", (), {"input": torch.tensor([1.0, -2.0]), "args": (), "kwargs": {}})()
    good = R.Variant("function", torch.abs, tinyattn.abs)
    assert R.check_out(good, sample) is None
    bad = R.Variant("function", torch.abs, lambda x, out=None: tinyattn.abs(x))
    assert "does not return" in R.check_out(bad, sample)
