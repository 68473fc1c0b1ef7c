"""Exception types as torch raises them for matrices that do not line up and for
probabilities outside [0, 1]: torch raises RuntimeError (a PyTorch program's
``except RuntimeError`` must catch ours); tinyattn's errors are also ValueErrors, as they
were, and keep their explanation after torch's words."""
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="torch is the oracle")

CASES = {
    "matmul 2-d": lambda m: m.matmul(m.ones(2, 3), m.ones(4, 5)),
    "mm": lambda m: m.mm(m.ones(2, 3), m.ones(4, 5)),
    "@ 1-d": lambda m: m.ones(3) @ m.ones(4),
    "matmul batched": lambda m: m.ones(2, 2, 3) @ m.ones(2, 4, 5),
    "bmm": lambda m: m.bmm(m.ones(2, 2, 3), m.ones(2, 4, 5)),
    "linear": lambda m: m.nn.functional.linear(m.ones(2, 7, 3), m.ones(4, 5)),
    "nn.Linear": lambda m: m.nn.Linear(5, 4)(m.ones(2, 3)),
    "binary_cross_entropy": lambda m: m.nn.functional.binary_cross_entropy(
        m.tensor([1.5]), m.tensor([1.0])),
    "BCELoss negative": lambda m: m.nn.BCELoss()(m.tensor([-0.5]), m.tensor([1.0])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_torchs_runtime_error_and_its_words(name):
    with pytest.raises(RuntimeError) as theirs:
        CASES[name](torch)
    with pytest.raises(RuntimeError) as ours:
        CASES[name](ta)
    assert isinstance(ours.value, ValueError)              # as tinyattn raised before
    words = str(theirs.value).split(" (")[0][:40]
    if name not in ("@ 1-d", "matmul batched"):            # torch's words, then ours
        assert str(ours.value).startswith(words), (str(ours.value), words)


def test_the_words_check_can_fail():
    """Negative control: a different message does not start with torch's words."""
    assert not "matmul: shapes".startswith("mat1 and mat2 shapes cannot be multiplied")
