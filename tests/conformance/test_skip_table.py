"""The skip table stays true, and the harness can fail.

Every row names an op_db entry that exists and that tinyattn has, a check that entry has,
dtypes it is tested at and variants it has (a row for something gone is stale: delete it).
Rows of known disagreements are run as strict expected failures by test_op_db.py, so a row
whose case now agrees fails there. The negative controls below show that each check catches
what it is for: a wrong value, a missing error, a wrong gradient, a different save."""
import pytest

torch = pytest.importorskip("torch", reason="the conformance harness compares with torch")
pytest.importorskip("expecttest", reason="torch's test database needs expecttest")

import tinyattn  # noqa: E402

from . import op_runner as R  # noqa: E402
from .op_cases import dtype_name, op_entries  # noqa: E402
from .skips import TABLE  # noqa: E402

ENTRIES = {entry.key: entry for entry in op_entries()}


def _checks_of(entry):
    info = entry.info
    checks = {"values"}
    if info.supports_autograd and torch.float64 in info.supported_backward_dtypes("cpu"):
        checks |= {"gradients", "saves"}
    if info.error_inputs_func is not None:
        checks.add("errors")
    if R.out_dtype(entry) is not None:
        checks.add("out")
    return checks


@pytest.mark.parametrize("row", [r for r in TABLE if r.db == "op"], ids=lambda r: r.label())
def test_op_row_names_something_that_exists(row):
    entry = ENTRIES.get(row.name)
    assert entry is not None, f"{row.label()}: torch's op_db has no entry {row.name!r}"
    assert entry.present, f"{row.label()}: tinyattn has no {row.name}: delete the row"
    missing = set(row.checks) - _checks_of(entry)
    assert not missing, f"{row.label()}: {row.name} has no {sorted(missing)} check"
    tested = {dtype_name(d) for d in R.tested_dtypes(entry.info)}
    assert set(row.dtypes) <= tested, (f"{row.label()}: {row.name} is not tested at "
                                       f"{sorted(set(row.dtypes) - tested)}")
    kinds = {v.kind for v in entry.variants}
    assert set(row.variants) <= kinds, (f"{row.label()}: {row.name} has no variant "
                                        f"{sorted(set(row.variants) - kinds)}")


def test_every_row_gives_a_reason():
    for row in TABLE:
        assert len(row.reason) > 10, f"{row.label()}: a row needs a reason"


# ------------------------------------------------------------------ negative controls
def _sample(name, dtype=torch.float64, requires_grad=False):
    info = ENTRIES[name].info
    return info, R.generate(info, "values", dtype, requires_grad)


def test_a_wrong_value_is_caught():
    info, samples = _sample("exp")
    wrong = R.Variant("function", torch.exp, tinyattn.expm1)
    right = R.Variant("function", torch.exp, tinyattn.exp)
    sample = next(s for s in samples if s.input.numel() > 0)
    assert R.check_values(right, sample) is None
    assert "not close" in R.check_values(wrong, sample)


def test_a_wrong_dtype_or_shape_is_caught():
    info, samples = _sample("exp")
    sample = next(s for s in samples if s.input.numel() > 0)
    as_float32 = R.Variant("function", torch.exp, lambda x: tinyattn.exp(x).float())
    assert "dtype float32" in R.check_values(as_float32, sample)
    flattened = R.Variant("function", torch.exp, lambda x: tinyattn.exp(x).reshape(-1, 1))
    assert "shape" in R.check_values(flattened, sample)


def test_a_missing_error_is_caught():
    info = ENTRIES["softmax"].info
    variant = R.Variant("function", torch.softmax, lambda x, *a, **k: x)
    error_input = next(iter(ENTRIES["gather"].info.error_inputs("cpu")))
    assert "torch raises" in R.check_error(variant, error_input)


def test_a_wrong_error_type_is_caught():
    info = ENTRIES["gather"].info
    error_input = next(e for e in info.error_inputs("cpu") if e.error_type is RuntimeError)
    gather = ENTRIES["gather"].function

    def raises(error):
        def call(*args, **kwargs):
            raise error("refused")
        return call
    assert R.check_error(gather, error_input) is None           # tinyattn's gather agrees
    wrong = R.Variant("function", torch.gather, raises(ValueError))
    assert "where torch raises RuntimeError" in R.check_error(wrong, error_input)
    subclass = R.Variant("function", torch.gather, raises(type("Sub", (RuntimeError,), {})))
    assert R.check_error(subclass, error_input) is None          # isinstance, as assertRaises


def test_operator_variants_are_compared():
    variants = {v.kind for v in ENTRIES["add"].variants}
    assert {"operator", "inplace_operator"} <= variants
    info, samples = _sample("add")
    sample = next(s for s in samples if s.input.numel() > 0 and s.args
                  and isinstance(s.args[0], torch.Tensor))
    wrong = R.Variant("inplace_operator", info.inplace_operator_variant,
                      lambda x, y: x + y)                     # a new tensor, not x changed
    assert "does not return its input" in R.check_values(wrong, sample)


def test_a_wrong_gradient_is_caught():
    info, samples = _sample("sin", requires_grad=True)
    sample = next(s for s in samples if s.input.numel() > 0)
    right = R.Variant("function", torch.sin, tinyattn.sin)
    wrong = R.Variant("function", torch.sin, lambda x: tinyattn.sin(x.detach()) + 0 * x)
    assert R.check_gradients(right, sample) is None
    assert "gradient of input tensor 0" in R.check_gradients(wrong, sample)


def test_a_different_save_is_caught():
    info, samples = _sample("exp", requires_grad=True)
    sample = next(s for s in samples if s.input.numel() > 0)
    # torch's exp saves its output; sin of a copy saves nothing of what the caller holds
    saves_nothing = R.Variant("function", torch.exp,
                              lambda x: tinyattn.exp(x.detach()).clone() + 0 * x)
    found = R.check_saves(saves_nothing, sample)
    assert any("write to output 0" in text for text in found), found


# ------------------------------------------------------------------ module and optimizer rows
def _module_and_optim_entries():
    from .module_cases import module_entries
    from .optim_cases import optim_entries
    return ({e.key: e for e in module_entries()}, {e.key: e for e in optim_entries()})


@pytest.mark.parametrize("row", [r for r in TABLE if r.db in ("module", "optim")],
                         ids=lambda r: r.label())
def test_module_and_optim_rows_name_something_that_exists(row):
    from . import module_runner as M
    from . import optim_runner as O
    modules, optimizers = _module_and_optim_entries()
    entry = (modules if row.db == "module" else optimizers).get(row.name)
    assert entry is not None, f"{row.label()}: torch's {row.db}_db has no {row.name!r}"
    assert entry.present, f"{row.label()}: tinyattn has no {row.name}: delete the row"
    if row.when is None:
        return
    if row.db == "optim":
        inputs = O.optimizer_inputs(entry.info)
    else:
        inputs = [m for training in M.training_modes(entry.info)
                  for m in M.generate_module_inputs(entry.info, torch.float64, False,
                                                    training)]
    assert any(row.when(i) for i in inputs), f"{row.label()}: no input matches: stale row"


def test_a_wrong_module_is_caught():
    from . import module_runner as M
    modules, _ = _module_and_optim_entries()
    relu = modules["nn.ReLU"]
    sample = M.generate_module_inputs(relu.info, torch.float64, True, True)[-1]
    assert M.check_module_values(relu, sample, torch.float64, True) is None
    as_sigmoid = M.ModuleEntry(relu.info, relu.key, tinyattn.nn.Sigmoid)
    assert "not close" in M.check_module_values(as_sigmoid, sample, torch.float64, True)


def test_a_wrong_parameter_gradient_is_caught():
    from . import module_runner as M
    modules, _ = _module_and_optim_entries()
    linear = modules["nn.Linear"]
    sample = M.generate_module_inputs(linear.info, torch.float64, True, True)[0]
    assert M.check_module_gradients(linear, sample, True) is None

    class FrozenBias(tinyattn.nn.Linear):          # the bias's gradient never arrives
        def forward(self, input):  # noqa: A002
            return tinyattn.nn.functional.linear(input, self.weight, self.bias.detach())
    wrong = M.ModuleEntry(linear.info, linear.key, FrozenBias)
    assert "parameter bias" in M.check_module_gradients(wrong, sample, True)


def test_a_wrong_optimizer_trajectory_is_caught():
    from . import optim_runner as O
    _, optimizers = _module_and_optim_entries()
    adam = optimizers["Adam"]
    default = O.optimizer_inputs(adam.info)[0]
    assert O.check_trajectory(adam, default) is None
    as_adamw = O.OptimEntry(adam.info, adam.key, tinyattn.optim.AdamW)   # weight decay 0.01
    assert "after step 1" in O.check_trajectory(as_adamw, default)
