"""``tinyattn.utils.data``: datasets and a batching loader with ``torch.utils.data``'s names
(docs/nn.md#data-loading).

    ds = TensorDataset(x, y)                      # x (N, ...), y (N, ...)
    train, val = random_split(ds, [0.9, 0.1], generator=np.random.default_rng(0))
    for xb, yb in DataLoader(train, batch_size=32, shuffle=True):
        ...                                       # xb (32, ...), yb (32, ...)

The loader draws index batches from a sampler and turns each list of samples into a batch
with ``collate_fn`` (``default_collate``: stacks tensors, arrays and numbers, and recurses
into tuples, lists and dicts). Shuffling draws a new permutation on every pass over the
loader, from ``generator`` (a ``numpy.random.Generator``) or else from tinyattn's default CPU
generator, so ``tinyattn.manual_seed(s)`` makes the order reproducible.

With ``num_workers > 0`` the batches are built in worker processes (multiprocess.py and
worker.py, docs/data_workers.md), the same batches in the same order. Deliberate
differences from PyTorch: ``pin_memory`` has nothing to pin on a NumPy backend (torch's
warning), and a ``generator`` is a NumPy generator (``tinyattn.Generator`` is one).
"""
from __future__ import annotations

import bisect
import collections.abc
import hashlib
import itertools
import math
import warnings
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence, Union

import numpy as np

from ... import backend
from ...ops import stack
from ...tensor import Tensor, as_tensor, shared_memory, tensor
from .multiprocess import MultiProcessingIter, resolve_context, warn_pin_memory
from .worker import WorkerInfo, get_worker_info

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
           "SubsetRandomSampler", "WeightedRandomSampler",
           "DataLoader", "default_collate", "default_convert", "get_worker_info"]


# ------------------------------------------------------------------ datasets
class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(index)`` and ``__len__()``."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define ``__iter__``. The loader batches it in order
    (no shuffling or sampler: there is no index to draw)."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class TensorDataset(Dataset):
    """Samples are ``(t[i] for t in tensors)``: tensors of equal first dim N."""

    def __init__(self, *tensors: Any):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        self.tensors = tuple(t if isinstance(t, Tensor) else as_tensor(np.asarray(t))
                             for t in tensors)
        sizes = [t.shape[0] if t.ndim else None for t in self.tensors]
        if None in sizes or len(set(sizes)) != 1:     # torch's AssertionError and its words
            raise AssertionError(f"Size mismatch between tensors: TensorDataset needs the same "
                                 f"first dim (the number of samples) in every tensor, got "
                                 f"shapes {[tuple(t.shape) for t in self.tensors]}")

    def __getitem__(self, index: Any) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Any, indices: Sequence[int]):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, list):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several map-style datasets one after the other."""

    def __init__(self, datasets: Iterable[Any]):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise TypeError("ConcatDataset does not take IterableDatasets")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            if -index > len(self):
                raise IndexError(f"index {index} is out of range for length {len(self)}")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        if which == len(self.datasets):
            raise IndexError(f"index {index} is out of range for length {len(self)}")
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def _generator(generator: Any) -> Any:
    if generator is None:
        return backend.default_generator("cpu")
    if not isinstance(generator, np.random.Generator):
        raise TypeError(f"generator must be a numpy.random.Generator (np.random.default_rng"
                        f"(seed)) or None for tinyattn's default one, got "
                        f"{type(generator).__name__}")
    return generator


def random_split(dataset: Any, lengths: Sequence[Union[int, float]],
                 generator: Any = None) -> List[Subset]:
    """Split into non-overlapping random Subsets of the given lengths, or of fractions that
    sum to 1 (floor(fraction * N) each, the remainder handed out one by one from the first,
    as PyTorch)."""
    total = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ValueError(f"random_split: fraction at index {i} is not between 0 and "
                                 f"1: {fraction}")
            sizes.append(math.floor(total * fraction))
        for i in range(total - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              f"empty dataset.", stacklevel=2)
        lengths = sizes
    if any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0
           for n in lengths):
        raise ValueError(f"random_split: lengths must be counts >= 0 or fractions summing to "
                         f"1, got {lengths}")
    if sum(lengths) != total:
        raise ValueError(f"random_split: the lengths {lengths} sum to {sum(lengths)}, but the "
                         f"dataset has {total} samples")
    order = _generator(generator).permutation(total).tolist()
    return [Subset(dataset, order[end - n:end])
            for end, n in zip(itertools.accumulate(lengths), lengths)]


# ------------------------------------------------------------------ samplers
class Sampler:
    """Yields dataset indices (subclasses define ``__iter__`` and ``__len__``)."""

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source: Any):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


_CHUNK = 32                     # indices RandomSampler draws at a time with replacement (torch's)


class RandomSampler(Sampler):
    """A new random permutation on each pass (or ``num_samples`` draws with replacement)."""

    def __init__(self, data_source: Any, replacement: bool = False,
                 num_samples: Optional[int] = None, generator: Any = None):
        self.data_source, self.replacement = data_source, bool(replacement)
        self._num_samples, self.generator = num_samples, generator
        if num_samples is not None and (isinstance(num_samples, bool) or
                                        not isinstance(num_samples, int) or num_samples < 1):
            raise ValueError(f"RandomSampler: num_samples must be a positive int, got "
                             f"{num_samples!r}")
        _generator(generator)                    # check it now, not at the first batch

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        """Lazily, as torch: with replacement 32 draws at a time (``num_samples=10**10``
        costs no memory), without one permutation per pass over the data (the last pass
        cut short). Draws happen as the indices are taken, not when iteration starts."""
        gen, n, total = _generator(self.generator), len(self.data_source), self.num_samples
        if n == 0:
            if self.replacement and total:
                raise ValueError("RandomSampler: cannot draw samples from an empty dataset")
            return
        if self.replacement:
            for _ in range(total // _CHUNK):
                yield from gen.integers(0, n, size=_CHUNK).tolist()
            yield from gen.integers(0, n, size=total % _CHUNK).tolist()
            return
        for _ in range(total // n):
            yield from gen.permutation(n).tolist()
        if total % n:
            yield from gen.permutation(n)[:total % n].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a new random order on each pass (torch's: a train/validation
    split of one dataset by index lists)."""

    def __init__(self, indices: Sequence[int], generator: Any = None):
        self.indices, self.generator = indices, generator
        _generator(generator)

    def __iter__(self) -> Iterator[int]:
        for i in _generator(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights`` (with
    replacement by default, as torch's ``multinomial``); a new draw on each pass."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None):
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or \
                num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        values = np.asarray(weights._data if isinstance(weights, Tensor) else weights,
                            dtype=np.float64)
        if values.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(values.shape)}")
        self.weights = tensor(values)              # float64, as torch's as_tensor(double)
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator
        _generator(generator)

    def __iter__(self) -> Iterator[int]:
        w = self.weights._data
        if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (the weights must be finite, "
                               ">= 0 and not all zero)")
        gen, n = _generator(self.generator), len(w)
        if self.replacement:
            yield from gen.choice(n, size=self.num_samples, p=w / w.sum()).tolist()
            return
        if self.num_samples > n:
            raise RuntimeError(f"cannot sample n_sample > prob_dist.size(-1) samples without "
                               f"replacement (num_samples={self.num_samples}, "
                               f"{n} weights)")
        positive = np.flatnonzero(w > 0)       # torch: the zero weights come last, if needed
        k = min(self.num_samples, len(positive))
        first = positive[gen.choice(len(positive), size=k, replace=False,
                                    p=w[positive] / w[positive].sum())]
        rest = gen.permutation(np.flatnonzero(w == 0))[:self.num_samples - k]
        yield from first.tolist() + rest.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter,
    or dropped with ``drop_last``)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size should be a positive integer, got {batch_size!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, bool(drop_last)

    def __iter__(self) -> Iterator[List[int]]:
        batch: List[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# ------------------------------------------------------------------ collation
def _stack_into_shared_memory(batch: Sequence[Tensor]) -> Optional[Tensor]:
    """In a worker, as torch's ``default_collate``: the stacked batch is written straight
    into shared memory, so that sending it to the main process copies nothing more (one
    copy of the bytes in all: the stacking). None where that does not apply (a sample on a
    GPU or that requires grad, mixed dtypes, no shared memory): then ``stack`` does it."""
    first = batch[0]
    if not shared_memory.available() or any(
            type(t._data) is not np.ndarray or t.requires_grad or t.dtype != first.dtype
            for t in batch):
        return None
    shape = (len(batch),) + tuple(first.shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * first.dtype.itemsize
    if nbytes == 0:
        return None
    _, mapping = shared_memory.new_storage(nbytes)
    out = np.ndarray(shape, dtype=first.dtype, buffer=mapping)
    np.stack([t._data for t in batch], out=out)
    return Tensor._wrap(out)


def default_collate(batch: Sequence[Any]) -> Any:
    """Turn a list of samples into a batch, as ``torch.utils.data.default_collate``: tensors
    and NumPy arrays are stacked along a new dim 0, Python floats become a float64 tensor and
    ints an int64 one (PyTorch's choice), strings stay a list, and tuples, lists and dicts
    are collated field by field (a tuple of fields gives a list, as in PyTorch)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        shapes = {t.shape for t in batch}
        if len(shapes) > 1:
            raise RuntimeError(f"default_collate: stack expects each tensor to be equal size, "
                               f"got shapes {sorted(shapes)}; pad the samples to one length or "
                               f"pass a collate_fn")
        if get_worker_info() is not None:
            shared = _stack_into_shared_memory(batch)
            if shared is not None:
                return shared
        return stack(list(batch))
    if isinstance(elem, np.ndarray) or isinstance(elem, np.generic):
        if np.asarray(elem).dtype.kind not in "biuf":
            raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, "
                            f"numbers, dicts or lists; found dtype {np.asarray(elem).dtype}")
        return default_collate([as_tensor(np.asarray(b)) for b in batch])
    if isinstance(elem, bool):
        return tensor(list(batch))
    if isinstance(elem, float):
        return tensor(list(batch), dtype="float64")
    if isinstance(elem, int):
        return tensor(list(batch), dtype="int64")
    if isinstance(elem, (str, bytes)):
        return batch if isinstance(batch, (list, tuple)) else list(batch)   # as torch: as is
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(collated)          # keep an OrderedDict an OrderedDict
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):          # a namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if len({len(sample) for sample in batch}) > 1:
            raise RuntimeError("default_collate: each element in list of batch should be of "
                               "equal size")
        return [default_collate(samples) for samples in zip(*batch)]   # tuples, as torch
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, "
                    f"dicts or lists; found {type(elem).__name__}")


def default_convert(data: Any) -> Any:
    """What ``batch_size=None`` gives each sample: NumPy arrays become tensors, containers are
    converted field by field, everything else is left alone."""
    if isinstance(data, (np.ndarray, np.generic)) and np.asarray(data).dtype.kind in "biuf":
        return as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return {key: default_convert(value) for key, value in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)):          # a tuple gives a list, as torch's
        return [default_convert(d) for d in data]
    return data


# ------------------------------------------------------------------ the loader
def _base_seed(generator: Any, passes: int) -> int:
    """The workers' base seed for this pass, read from the generator's state without
    drawing from it: the shuffle (and every other draw) stays what it is without workers,
    and the seed still follows ``manual_seed``, the draws before, and the pass number."""
    state = repr(generator.bit_generator.state).encode() + passes.to_bytes(8, "little")
    return int.from_bytes(hashlib.sha256(state).digest()[:8], "little") >> 2


def _check_worker_options(num_workers: Any, timeout: Any, prefetch_factor: Any,
                          persistent_workers: bool, multiprocessing_context: Any) -> None:
    """torch's checks of the worker options, with torch's messages."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, int):
        raise TypeError(f"num_workers must be an int, got {type(num_workers).__name__}")
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                         "disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in "
                         "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                         "otherwise set prefetch_factor to None.")
    if prefetch_factor is not None and (isinstance(prefetch_factor, bool) or
                                        not isinstance(prefetch_factor, int) or
                                        prefetch_factor < 1):
        raise ValueError(f"prefetch_factor must be a positive int (batches each worker "
                         f"prepares ahead), got {prefetch_factor!r}")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if multiprocessing_context is not None:
        if num_workers == 0:
            raise ValueError(f"multiprocessing_context can only be used with multi-process "
                             f"loading (num_workers > 0), but got num_workers={num_workers}")
        resolve_context(multiprocessing_context)


class DataLoader:
    """Batches of ``dataset``, as ``torch.utils.data.DataLoader``.

    Args:
        dataset: a map-style dataset (``__getitem__`` and ``__len__``) or an IterableDataset.
        batch_size: samples per batch (None: no batching, each sample converted alone).
        shuffle: a new random order on every pass.
        sampler, batch_sampler: custom index orders (exclusive with shuffle; batch_sampler
            also with batch_size, drop_last and sampler).
        collate_fn: list of samples -> batch (default ``default_collate``).
        drop_last: drop the last, smaller batch.
        generator: a ``numpy.random.Generator`` for shuffling (default: tinyattn's); it also
            draws the workers' base seed.
        num_workers: 0 loads in this process; N > 0 starts N worker processes
            (docs/data_workers.md): the same batches in the same order, with
            ``worker_init_fn``, ``prefetch_factor`` (default 2), ``persistent_workers``,
            ``timeout`` (seconds, 0: none), ``multiprocessing_context``.
        pin_memory: accepted; there is nothing to pin on a CPU (torch's warning).
    """

    def __init__(self, dataset: Any, batch_size: Optional[int] = 1,
                 shuffle: Optional[bool] = None, sampler: Any = None, batch_sampler: Any = None,
                 num_workers: int = 0, collate_fn: Optional[Callable[[List[Any]], Any]] = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Any = None, multiprocessing_context: Any = None,
                 generator: Any = None, **options: Any):
        prefetch_factor = options.pop("prefetch_factor", None)
        persistent_workers = bool(options.pop("persistent_workers", False))
        options.pop("pin_memory_device", None)
        options.pop("in_order", None)
        if options:
            raise TypeError(f"DataLoader got unexpected keyword arguments "
                            f"{sorted(options)}")
        _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers,
                              multiprocessing_context)
        self.prefetch_factor = (2 if num_workers else None) if prefetch_factor is None \
            else prefetch_factor
        self.persistent_workers, self.worker_init_fn = persistent_workers, worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self._iterator: Any = None
        self._passes = 0
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, bool(drop_last)
        self.generator, self.num_workers = generator, num_workers
        self.pin_memory = bool(pin_memory)
        self.timeout = timeout
        iterable = isinstance(dataset, IterableDataset) or (
            not hasattr(dataset, "__getitem__") and hasattr(dataset, "__iter__"))
        self._iterable = iterable
        if iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError("DataLoader: an iterable-style dataset is read in order; shuffle, "
                             "sampler and batch_sampler do not apply (shuffle inside it)")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None
                                          or drop_last):
            raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                             "batch_size, shuffle, sampler, and drop_last")
        if batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None option disables auto-batching and "
                             "is mutually exclusive with drop_last")
        if batch_sampler is not None:
            batch_size = None
            self.batch_size = None
        elif batch_size is not None and (isinstance(batch_size, bool) or
                                         not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"DataLoader: batch_size should be a positive integer or None, "
                             f"got {batch_size!r}")
        if sampler is None and not iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle \
                else SequentialSampler(dataset)
        self.sampler = sampler
        if batch_sampler is None and batch_size is not None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, self.drop_last)
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None or (
                iterable and batch_size is not None) else default_convert
        self.collate_fn = collate_fn

    def __iter__(self) -> Iterator[Any]:
        if self.pin_memory:
            warn_pin_memory()
        if self.num_workers > 0:
            self._passes += 1
            return self._worker_iterator(_base_seed(_generator(self.generator),
                                                    self._passes))
        if self._iterable:
            return self._iterate_stream()
        if self.batch_sampler is not None:
            return (self.collate_fn([self.dataset[i] for i in indices])
                    for indices in self.batch_sampler)
        return (self.collate_fn(self.dataset[i]) for i in self.sampler)

    def _worker_iterator(self, base_seed: int) -> MultiProcessingIter:
        """Worker processes (multiprocess.py); with persistent_workers one set of them
        serves every pass."""
        if self.persistent_workers and self._iterator is not None and \
                not self._iterator._shutdown:
            self._iterator._reset()
            return self._iterator
        iterator = MultiProcessingIter(self, base_seed)
        if self.persistent_workers:
            self._iterator = iterator
        return iterator

    def _iterate_stream(self) -> Iterator[Any]:
        stream = iter(self.dataset)
        if self.batch_size is None:
            for sample in stream:
                yield self.collate_fn(sample)
            return
        while True:
            batch = list(itertools.islice(stream, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)                # TypeError if the stream has no length
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)
