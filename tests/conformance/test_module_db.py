"""tinyattn against torch's ModuleInfo database (module_db): forward values, float64
gradients of inputs and parameters, error inputs.

Every module_db entry tinyattn has by torch's name is run here (module_cases.py says how),
built from torch's constructor arguments with torch's parameters and buffers copied in; the
cases the harness does not compare are rows of the skip table (skips.py), each with its
reason. The entries tinyattn lacks are listed in docs/pytorch.md's coverage report
(coverage.py). Skipped without torch or expecttest (CI installs both)."""
import pytest

pytest.importorskip("torch", reason="the conformance harness compares with torch")
pytest.importorskip("expecttest", reason="torch's test database needs expecttest")

from .module_cases import module_cases, run_module_case  # noqa: E402


def _marks(case):
    """A skip for a row that is never compared, a strict expected failure for a known
    disagreement (it fails the moment tinyattn agrees: delete the row then)."""
    row = case.own or case.whole
    if row is None:
        return []
    if row.kind in ("skip", "structure"):
        return [pytest.mark.skip(reason=f"skip table: {row.reason}")]
    return [pytest.mark.xfail(strict=True, reason=f"skip table: {row.reason}")]


@pytest.mark.parametrize("case", [pytest.param(c, marks=_marks(c), id=c.id)
                                  for c in module_cases()])
def test_module(case):
    run_module_case(case)


def test_structure_check_is_not_vacuous():
    """Negative control of the repr/state_dict comparison each values case ends with."""
    import torch
    import tinyattn
    from .module_runner import _compare_structure
    assert _compare_structure(torch.nn.Linear(2, 3), tinyattn.nn.Linear(2, 3)) is None
    assert "repr" in _compare_structure(torch.nn.Linear(2, 3), tinyattn.nn.Linear(3, 2))
    assert "state_dict keys" in _compare_structure(torch.nn.Linear(2, 3),
                                                   tinyattn.nn.Linear(2, 3, bias=False))
