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
