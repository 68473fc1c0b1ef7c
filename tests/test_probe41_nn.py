"""Probe 41 (nn modules against torch): each test builds the same thing in torch and in
tinyattn and compares what a learner would see (values, order, printed output)."""
from collections import OrderedDict

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as tnn

torch = pytest.importorskip("torch")


def test_load_state_dict_result_prints_as_torch():
    results = []
    for lib in (torch, ta):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
        full = m.load_state_dict(m.state_dict())
        partial = {k: v for k, v in m.state_dict().items() if "bias" not in k}
        partial["extra.w"] = lib.zeros(1)
        r = m.load_state_dict(partial, strict=False)
        results.append((repr(full), str(full), repr(r), str(r), list(r.missing_keys),
                        list(r.unexpected_keys), tuple(r)[1], full == ([], [])))
    assert results[1] == results[0]
    assert results[0][0] == "<All keys matched successfully>"        # not vacuous


@pytest.mark.parametrize("make_items", [
    lambda lib: {"x": lib.ones(2), "a": lib.zeros(1), "m": lib.ones(3)},         # plain dict: sorted
    lambda lib: OrderedDict([("x", lib.ones(2)), ("a", lib.zeros(1))]),         # kept in order
    lambda lib: [("q", lib.ones(1)), ("b", lib.ones(2))],                       # pairs: kept
])
def test_parameter_dict_order_as_torch(make_items):
    orders = []
    for lib in (torch, ta):
        pd = lib.nn.ParameterDict(make_items(lib))
        pd.update({"d": lib.ones(1), "c": lib.ones(1)})

        class W(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.pd = pd
        w = W()
        orders.append((list(pd), [k for k, _ in w.named_parameters()], list(w.state_dict()),
                       [tuple(p.shape) for p in w.parameters()]))
    assert orders[1] == orders[0]
