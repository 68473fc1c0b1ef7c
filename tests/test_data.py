"""tinyattn.utils.data against torch.utils.data: batch shapes and contents, shuffling that
covers every sample once per pass and is reproducible, drop_last, lengths, random_split's
sizes, default_collate's types, and the errors."""
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                                 IterableDataset, RandomSampler, Subset, TensorDataset,
                                 default_collate, random_split)


def _data(n=10):
    x = ta.tensor(np.arange(n * 3, dtype=np.float32).reshape(n, 3))
    return x, ta.arange(n)


@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True), (10, True),
                                                  (15, False)])
def test_sequential_batches_match_torch(batch_size, drop_last):
    torch = pytest.importorskip("torch")
    x, y = _data()
    ours = DataLoader(TensorDataset(x, y), batch_size=batch_size, drop_last=drop_last)
    theirs = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(x.numpy()), torch.tensor(y.numpy())),
        batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    batches, tbatches = list(ours), list(theirs)
    assert len(batches) == len(tbatches)
    for (xb, yb), (txb, tyb) in zip(batches, tbatches):
        assert isinstance(xb, ta.Tensor) and xb.dtype == np.float32 and yb.dtype == np.int64
        np.testing.assert_array_equal(xb.numpy(), txb.numpy())
        np.testing.assert_array_equal(yb.numpy(), tyb.numpy())


def test_shuffle_covers_every_sample_once_and_is_reproducible():
    x, y = _data(50)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    ta.manual_seed(3)
    first = np.concatenate([yb.numpy() for _, yb in loader])
    second = np.concatenate([yb.numpy() for _, yb in loader])     # a new order each pass
    assert sorted(first) == list(range(50)) and sorted(second) == list(range(50))
    assert not np.array_equal(first, second) and not np.array_equal(first, np.arange(50))
    ta.manual_seed(3)
    again = np.concatenate([yb.numpy() for _, yb in loader])
    assert np.array_equal(first, again)
    for xb, yb in loader:                                        # rows stay paired
        np.testing.assert_array_equal(xb.numpy()[:, 0], yb.numpy() * 3)
    gen_a = DataLoader(TensorDataset(x, y), batch_size=50, shuffle=True,
                       generator=np.random.default_rng(7))
    gen_b = DataLoader(TensorDataset(x, y), batch_size=50, shuffle=True,
                       generator=np.random.default_rng(7))
    assert np.array_equal(next(iter(gen_a))[1].numpy(), next(iter(gen_b))[1].numpy())


def test_default_collate_types_follow_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate
    Pair = namedtuple("Pair", "a b")
    samples = [{"f": 1.5, "i": 2, "s": "x", "arr": np.ones(2, np.float32),
                "t": (ta.zeros(2), [3, 4]), "nt": Pair(1.0, 2)} for _ in range(3)]
    tsamples = [{"f": 1.5, "i": 2, "s": "x", "arr": np.ones(2, np.float32),
                 "t": (torch.zeros(2), [3, 4]), "nt": Pair(1.0, 2)} for _ in range(3)]
    ours, theirs = default_collate(samples), torch_collate(tsamples)

    def describe(value):
        if hasattr(value, "shape"):
            return ("tensor", tuple(value.shape), str(value.dtype).replace("torch.", ""))
        if isinstance(value, dict):
            return {k: describe(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return (type(value).__name__, [describe(v) for v in value])
        return value
    assert describe(ours) == describe(theirs)
    ordered = default_collate([OrderedDict(a=1), OrderedDict(a=2)])
    assert isinstance(ordered, OrderedDict)
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([ta.zeros(2), ta.zeros(3)])
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="found object"):
        default_collate([object(), object()])


def test_random_split_sizes_and_disjointness_follow_torch():
    torch = pytest.importorskip("torch")
    for lengths in ([3, 7], [0.3, 0.3, 0.4], [0.25, 0.75], [0.5, 0.5]):
        ours = random_split(range(11) if sum(lengths) != 10 else range(10), lengths,
                            generator=np.random.default_rng(0))
        theirs = torch.utils.data.random_split(range(11) if sum(lengths) != 10 else range(10),
                                               lengths)
        assert [len(s) for s in ours] == [len(s) for s in theirs]
        items = [i for s in ours for i in s]
        assert sorted(items) == list(range(len(items)))
    with pytest.raises(ValueError, match="sum to 9, but the dataset has 10"):
        random_split(range(10), [4, 5])
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        random_split(range(10), [5, 5], generator=42)


def test_subset_concat_and_samplers():
    data = list(range(10, 20))
    sub = Subset(data, [3, 1, 4])
    assert [sub[i] for i in range(len(sub))] == [13, 11, 14] and sub[[0, 2]] == [13, 14]
    both = ConcatDataset([sub, Subset(data, [9])])
    assert len(both) == 4 and both[3] == 19 and both[-1] == 19 and both[2] == 14
    with pytest.raises(IndexError):
        both[4]
    assert list(BatchSampler(range(7), 3, drop_last=False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(BatchSampler(range(7), 3, drop_last=True)) == 2
    draws = list(RandomSampler(range(5), replacement=True, num_samples=12,
                               generator=np.random.default_rng(0)))
    assert len(draws) == 12 and set(draws) <= set(range(5))
    loader = DataLoader(data, sampler=[9, 0], batch_size=None)
    assert [int(v) for v in loader] == [19, 10]


def test_custom_collate_batch_none_and_plain_datasets():
    class Squares(Dataset):
        def __getitem__(self, i):
            return np.array([i, i * i])

        def __len__(self):
            return 5

    assert next(iter(DataLoader(Squares(), batch_size=None))).shape == (2,)
    batch = next(iter(DataLoader(Squares(), batch_size=2)))
    assert batch.shape == (2, 2) and batch.dtype == np.int64
    lists = next(iter(DataLoader(Squares(), batch_size=3, collate_fn=list)))
    assert isinstance(lists, list) and len(lists) == 3


def test_iterable_dataset_is_batched_in_order():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5],
                                                                       [6]]
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="read in order"):
        DataLoader(Stream(), shuffle=True)


def test_loader_errors_name_the_option():
    ds = TensorDataset(*_data())
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)      # workers themselves: tests/test_data_workers.py
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0, 1], shuffle=True)
    with pytest.raises(ValueError, match="positive integer"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(ta.zeros(3, 2), ta.zeros(4))


def test_a_training_loop_over_a_loader_learns():
    """The loader in use: linear regression by mini-batch SGD reaches the true weights."""
    from tinyattn import nn, optim
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 3)).astype(np.float32)
    y = (x @ np.array([1.5, -2.0, 0.5], np.float32))[:, None]
    ta.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(ta.tensor(x), ta.tensor(y)), batch_size=32, shuffle=True)
    for _ in range(20):
        for xb, yb in loader:
            loss = ((model(xb) - yb) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    np.testing.assert_allclose(model.weight.numpy()[0], [1.5, -2.0, 0.5], atol=1e-3)
