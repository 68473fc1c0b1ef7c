"""tinyattn against torch's OptimizerInfo database (optim_db): trajectories.

Every optim_db entry tinyattn has by torch's name runs each of its constructor variants
(optim_inputs_func) over the same small float64 model in both frameworks; the parameters
must agree after every step (optim_runner.py). Variants tinyattn lacks or computes
differently are rows of the skip table (skips.py) with their reasons. Skipped without torch
or expecttest (CI installs both)."""
import pytest

pytest.importorskip("torch", reason="the conformance harness compares with torch")
pytest.importorskip("expecttest", reason="torch's test database needs expecttest")

from .optim_cases import marks_for, optim_cases, run_optim_case  # noqa: E402


@pytest.mark.parametrize("case", [pytest.param(c, marks=marks_for(c), id=c.id)
                                  for c in optim_cases()])
def test_optimizer(case):
    run_optim_case(case)
