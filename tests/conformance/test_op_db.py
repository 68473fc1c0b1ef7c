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


def test_remembered_torch_str_is_told_apart_by_values_and_dtype():
    """Negative control of op_runner._torch_str, which remembers torch's str() of a result:
    tensors of one shape whose printed forms differ (values that print as words, another
    dtype, autograd state) are not mistaken for one another, in either order."""
    import torch
    import tinyattn
    from . import op_runner as R
    ours = tinyattn.tensor([True, False])
    assert R._printed_differently(ours, torch.tensor([True, False])) is None
    assert "str(result)" in R._printed_differently(ours, torch.tensor([False, True]))
    assert R._printed_differently(ours, torch.tensor([True, False])) is None
    for other in (torch.tensor([1.0, 0.0], dtype=torch.float16),
                  torch.tensor([1.0, 0.0], requires_grad=True) * 1):
        assert R._torch_str(other) == str(other)
        assert R._torch_str(other) == str(other)         # the remembered text
    assert R._torch_str(torch.tensor([1.0, 0.0])) != R._torch_str(
        torch.tensor([1.0, 0.0], dtype=torch.float16))


def test_out_gauge_comparison_is_not_vacuous():
    """Negative control of check_out(gauge=True) (complex43): an svd whose vectors differ from
    torch's only in sign agrees; one with a wrong singular vector does not."""
    import torch
    import tinyattn
    from . import op_runner as R
    matrix = torch.tensor([[3.0, 1.0, 0.5], [1.0, 2.0, -1.0]])
    sample = type("S", (), {"input": matrix, "args": (), "kwargs": {},
                            "output_process_fn_grad": staticmethod(
                                lambda usv: (usv[0].abs(), usv[1], usv[2].abs()))})()

    torch_u = torch.linalg.svd(matrix, full_matrices=False)[0]

    def flipped(x, out=None):          # torch's first vector's sign turned round
        u, s, vh = tinyattn.linalg.svd(x, full_matrices=False)
        same = (u * tinyattn.tensor(torch_u.numpy())).sum(0).sign()
        flip = same * tinyattn.tensor([-1.0, 1.0])
        return _write(out, (u * flip, s, vh * flip.reshape(2, 1)))

    def wrong(x, out=None):
        u, s, vh = tinyattn.linalg.svd(x, full_matrices=False)
        return _write(out, (u * 2, s, vh))

    def _write(out, values):
        for target, value in zip(out, values):
            target.copy_(value)
        return out
    torch_svd = lambda x, out=None: torch.linalg.svd(x, full_matrices=False, out=out)  # noqa
    assert R.check_out(R.Variant("function", torch_svd, flipped), sample, gauge=True) is None
    assert "signs removed" in R.check_out(R.Variant("function", torch_svd, wrong), sample,
                                          gauge=True)
    assert R.check_out(R.Variant("function", torch_svd, flipped), sample) is not None
