"""Loading prepared datasets and turning them into model-ready batches (NumPy only).

Entry point: :func:`load` returns either a :class:`Dataset` (random access, for MNIST, CIFAR-10,
music, FSDD, TIMIT) or a :class:`TokenStream` (PTB). Batching:

* :func:`batches` -- shuffled (or ordered) mini-batches, deterministic given ``(seed, epoch)``
  and resumable with ``start_batch``; variable-length sets come padded with a mask;
* :func:`tbptt_batches` -- truncated-BPTT chunks for PTB with the hidden-state contract below.

Nothing here imports TensorFlow; records are read through ``tfds``'s array_record data source.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import pathlib
import queue
import re
import tempfile
import threading
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence

import numpy as np
import tensorflow_datasets as tfds

from lvf_jax._validation import fail
from lvf_jax.data import tfds_builders
from lvf_jax.data import paths

PERMUTATION_SEED = 92916
_SPLIT_CODES = {"train": 0, "valid": 1, "test": 2}

# name -> (builder class, builder config, kind)
_REGISTRY = {
    "mnist": (tfds_builders.LvfMnist, None, "mnist"),
    "pmnist": (tfds_builders.LvfMnist, None, "mnist"),
    "cifar10": (tfds_builders.LvfCifar10, None, "cifar"),
    "cifar10_noise": (tfds_builders.LvfCifar10, None, "cifar"),
    "ptb_char": (tfds_builders.LvfPtb, "char", "ptb"),
    "ptb_word": (tfds_builders.LvfPtb, "word", "ptb"),
    "jsb": (tfds_builders.LvfPolyphonic, "jsb", "music"),
    "musedata": (tfds_builders.LvfPolyphonic, "musedata", "music"),
    "nottingham": (tfds_builders.LvfPolyphonic, "nottingham", "music"),
    "piano_midi": (tfds_builders.LvfPolyphonic, "piano_midi", "music"),
    "fsdd": (tfds_builders.LvfFsdd, None, "speech"),
    "timit": (tfds_builders.LvfTimit, None, "speech"),
}
DATASETS = tuple(_REGISTRY)
_TFDS_BUILTIN = {"mnist": "mnist", "pmnist": "mnist", "cifar10": "cifar10",
                 "cifar10_noise": "cifar10"}



# ----------------------------------------------------------------------------------------------
# Preparation

def builder(name: str, *, data_dir: Optional[paths.PathLike] = None,
            tfds_dir: Optional[paths.PathLike] = None, download: bool = False,
            verify_checksums: bool = True, **builder_kwargs) -> tfds.core.DatasetBuilder:
  """Returns the (unprepared or prepared) TFDS builder behind dataset ``name``.

  Args:
    name: one of :data:`DATASETS`.
    data_dir: raw data (manual) directory; default ``$LVF_JAX_DATA_DIR`` or
    ``~/.cache/lvf_jax/data``.
    tfds_dir: TFDS data directory for the array_record cache; default ``$LVF_JAX_TFDS_DIR``
      or ``~/tensorflow_datasets``.
    download: allow downloading raw files that are not in ``data_dir``.
    verify_checksums: check the raw files' sha256 before preparing.
    **builder_kwargs: extra builder arguments (e.g. ``split_lists`` for TIMIT).
  """
  if name not in _REGISTRY:
    fail("builder", "name", name, f"one of {DATASETS}")
  cls, config, _ = _REGISTRY[name]
  kwargs = dict(raw_dir=paths.raw_data_dir(data_dir), allow_download=download,
                verify_checksums=verify_checksums, data_dir=str(paths.tfds_data_dir(tfds_dir)),
                **builder_kwargs)
  if config is not None:
    kwargs["config"] = config
  return cls(**kwargs)


def download_and_prepare(name: str, **kwargs) -> tfds.core.DatasetBuilder:
  """TFDS's download-and-prepare of dataset ``name`` into the array_record cache (no-op if
  already there).

  Accepts the arguments of :func:`builder`. Raises :class:`~lvf_jax.data.paths.DataError`
  subclasses naming the missing/corrupt file, its checksum and how to obtain it. Processes
  that prepare the same dataset at once (parallel runs on a new machine) take turns: one
  prepares it, the others then read it.
  """
  return _download_and_prepare_once(name, lambda: builder(name, **kwargs), kwargs.get("tfds_dir"))


def _download_and_prepare_once(name: str, make: Callable[[], Any], tfds_dir,
                               first: Any = None) -> Any:
  """``make()``'s builder, prepared under an exclusive lock on a file in the temporary
  directory, named by the dataset and the TFDS directory (which stays untouched); ``first``:
  a builder ``make()`` returned already (checked before the lock instead of a new one)."""
  b = make() if first is None else first
  if _is_prepared(b):
    return b
  where = str(pathlib.Path(paths.tfds_data_dir(tfds_dir)).resolve())
  key = hashlib.sha256(f"{where}\0{name}".encode()).hexdigest()[:16]
  with _file_lock(pathlib.Path(tempfile.gettempdir()) / f"lvf_jax-prepare-{key}.lock"):
    b = make()  # another process may have prepared it while this one waited
    if not _is_prepared(b):
      _run_download_and_prepare(name, b)
  return b


@contextlib.contextmanager
def _file_lock(path: pathlib.Path) -> Iterator[None]:
  """An exclusive ``flock`` on ``path`` (created if needed, left in place); no lock where
  ``fcntl`` is missing (not POSIX)."""
  try:
    import fcntl  # pylint: disable=import-outside-toplevel
  except ImportError:
    yield
    return
  with open(path, "a", encoding="utf-8") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    try:
      yield
    finally:
      fcntl.flock(f, fcntl.LOCK_UN)


def _run_download_and_prepare(name: str, b) -> None:
  """``b.download_and_prepare`` from its raw directory; a raw file without the examples of a
  split raises :class:`~lvf_jax.data.paths.CorruptDataError` (TFDS: an ``AssertionError``)."""
  raw_dir = b._raw_dir  # pylint: disable=protected-access
  try:
    b.download_and_prepare(download_config=tfds.download.DownloadConfig(
        manual_dir=str(raw_dir)))
  except AssertionError as e:
    found = re.search(r'split "([^"]+)": No examples were yielded', str(e))
    if found is None:
      raise
    raise paths.CorruptDataError(
        f"{name}: the raw files in {raw_dir} hold no examples of split {found.group(1)!r}; "
        f"the files are incomplete: replace them with complete copies (the data README "
        f"of each dataset names its source and sha256).") from None


def _get_many(source, indices: Sequence[int]) -> List[Dict[str, Any]]:
  """Reads several records (``__getitems__`` when the source supports it)."""
  indices = [int(i) for i in indices]
  getitems = getattr(source, "__getitems__", None)
  if getitems is not None:
    try:
      return list(getitems(indices))
    except TypeError:  # e.g. tfds.testing.mock_data's data source mock
      pass
  return [source[i] for i in indices]


# ----------------------------------------------------------------------------------------------
# Datasets

@dataclasses.dataclass
class Dataset:
  """Random-access view of one split: ``len``, ``ds[i]``, ``ds.get_batch(indices)``.

  Attributes:
    name: dataset name.
    split: 'train', 'valid', 'test' (or 'train_full').
    source: the underlying TFDS data source (or any sequence of example dicts).
    indices: record indices of ``source`` that make up this split (held-out validation).
    transform: maps a list of raw records and their record indices to a batch dict.
    info: static facts (``input_dim``, ``seq_len``, ``num_classes``, ...).
  """
  name: str
  split: str
  source: Any
  indices: np.ndarray
  transform: Callable[[List[Dict[str, Any]], np.ndarray], Dict[str, np.ndarray]]
  info: Dict[str, Any]

  def __len__(self) -> int:
    return int(self.indices.shape[0])

  def records(self, positions: Sequence[int]) -> List[Dict[str, Any]]:
    """Raw (untransformed) records at the given positions of this split."""
    return _get_many(self.source, self.indices[np.asarray(positions, np.int64)])

  def get_batch(self, positions: Sequence[int]) -> Dict[str, np.ndarray]:
    """Model-ready batch for the given positions of this split."""
    positions = np.asarray(positions, np.int64)
    if positions.size and (positions.min() < 0 or positions.max() >= len(self)):
      fail("Dataset.get_batch", "positions", positions.tolist()[:8],
            f"indices in [0, {len(self)})")
    rec_idx = self.indices[positions]
    return self.transform(_get_many(self.source, rec_idx), rec_idx)

  def __getitem__(self, i: int) -> Dict[str, np.ndarray]:
    return {k: v[0] for k, v in self.get_batch([i]).items()}

  def cache(self) -> "Dataset":
    """Reads every record once into memory; later batches index a Python list."""
    recs = _get_many(self.source, self.indices)
    return dataclasses.replace(self, source=recs, indices=np.arange(len(recs)))


def holdout_split(num_train: int, valid_size: int, seed: int = 0) -> Dict[str, np.ndarray]:
  """Deterministic validation hold-out: ``RandomState(seed).permutation(num_train)``.

  The first ``valid_size`` indices (sorted) form 'valid', the rest (sorted) 'train'.
  """
  if not 0 < valid_size < num_train:
    fail("holdout_split", "valid_size", valid_size, f"in (0, num_train={num_train})")
  perm = np.random.RandomState(seed).permutation(num_train)
  return {"valid": np.sort(perm[:valid_size]), "train": np.sort(perm[valid_size:]),
          "train_full": np.arange(num_train)}


def mnist_permutation(seed: int = PERMUTATION_SEED) -> np.ndarray:
  """The pixel permutation of pMNIST: ``numpy.random.RandomState(seed).permutation(784)``."""
  return np.random.RandomState(seed).permutation(784)


def _mnist_transform(permutation: Optional[np.ndarray]):
  def transform(recs, rec_idx):
    del rec_idx
    img = np.stack([np.asarray(r["image"], np.uint8).reshape(784) for r in recs])
    x = img.astype(np.float32) / np.float32(255.0)
    if permutation is not None:
      x = x[:, permutation]
    return {"inputs": x[:, :, None], "labels": np.asarray([r["label"] for r in recs], np.int32)}
  return transform


def cifar_noise(rec_idx: int, split: str, noise_seed: int, steps: int = 968,
                dim: int = 96) -> np.ndarray:
  """The N(0, 1) padding of one noise-padded CIFAR-10 example, reproducible per example.

  Drawn from ``numpy.random.default_rng([noise_seed, split_code, rec_idx])`` with split codes
  train 0 / test 2 (``rec_idx`` is the record index in the TFDS split, so a held-out
  validation example keeps its noise).
  """
  rng = np.random.default_rng([noise_seed, _SPLIT_CODES[split], int(rec_idx)])
  return rng.standard_normal((steps, dim), dtype=np.float32)


def _cifar_transform(noise: bool, base_split: str, noise_seed: int):
  def transform(recs, rec_idx):
    img = np.stack([np.asarray(r["image"], np.uint8).reshape(32, 32, 3) for r in recs])
    x = img.astype(np.float32) / np.float32(255.0)
    labels = np.asarray([r["label"] for r in recs], np.int32)
    if not noise:
      return {"inputs": x.reshape(-1, 1024, 3), "labels": labels}
    rows = x.reshape(-1, 32, 96)
    pad = np.stack([cifar_noise(i, base_split, noise_seed) for i in rec_idx])
    return {"inputs": np.concatenate([rows, pad], axis=1), "labels": labels}
  return transform


def _pad_multiple(n: int, multiple: int) -> int:
  return -(-n // multiple) * multiple


def _next_step_transform(key: str, dim: int, pad_multiple: int, dtype=np.float32):
  """x = seq[:-1], y = seq[1:], padded to the batch's longest, with a frame mask."""
  def transform(recs, rec_idx):
    del rec_idx
    seqs = [np.asarray(r[key]) for r in recs]
    lengths = np.asarray([max(s.shape[0] - 1, 0) for s in seqs], np.int32)
    t_max = _pad_multiple(max(int(lengths.max(initial=0)), 1), pad_multiple)
    b = len(seqs)
    x = np.zeros((b, t_max, dim), dtype)
    y = np.zeros((b, t_max, dim), dtype)
    mask = np.zeros((b, t_max), np.float32)
    for i, s in enumerate(seqs):
      n = lengths[i]
      x[i, :n] = s[:-1][:n]
      y[i, :n] = s[1:]
      mask[i, :n] = 1.0
    return {"inputs": x, "targets": y, "mask": mask, "lengths": lengths}
  return transform


@dataclasses.dataclass
class TokenStream:
  """A PTB split as one token stream (lines concatenated in order, ``<eos>`` after each).

  Attributes:
    name, split: identification.
    tokens: int32 array of token ids.
    vocab: id -> token string.
  """
  name: str
  split: str
  tokens: np.ndarray
  vocab: List[str]

  def __len__(self) -> int:
    return int(self.tokens.shape[0])

  @property
  def vocab_size(self) -> int:
    return len(self.vocab)


_TOKENS: dict = {}


def load(name: str, split: str, *, data_dir: Optional[paths.PathLike] = None,
         tfds_dir: Optional[paths.PathLike] = None, download: bool = False,
         prepare_if_missing: bool = True, verify_checksums: bool = True, source: str = "lvf",
         valid_size: int = 5000, valid_seed: int = 0, permutation_seed: int = PERMUTATION_SEED,
         noise_seed: int = 0, pad_multiple: int = 1, in_memory: bool = False,
         **builder_kwargs):
  """Loads one split of a benchmark dataset.

  Args:
    name: 'mnist', 'pmnist', 'cifar10', 'cifar10_noise', 'ptb_char', 'ptb_word', 'jsb',
      'musedata', 'nottingham', 'piano_midi', 'fsdd' or 'timit'.
    split: 'train', 'valid' or 'test'; MNIST/CIFAR-10 also 'train_full' (train before the
      validation hold-out).
    data_dir: raw data directory (see :func:`lvf_jax.data.paths.raw_data_dir`).
    tfds_dir: TFDS data directory of the array_record cache.
    download: allow downloading raw files where a public URL exists.
    prepare_if_missing: prepare the dataset into ``tfds_dir`` when it is not cached yet.
    verify_checksums: verify raw files' sha256 while preparing.
    source: 'lvf' (our builders) or, for MNIST/CIFAR-10, 'tfds' to read TFDS's built-in
      ``mnist``/``cifar10`` (which must already be prepared in array_record format: preparing
      them needs TensorFlow).
    valid_size, valid_seed: MNIST/CIFAR-10 validation hold-out (:func:`holdout_split`).
    permutation_seed: pMNIST permutation seed (default 92916).
    noise_seed: seed of the noise padding of 'cifar10_noise'.
    pad_multiple: music/speech batches are padded to a multiple of this many steps.
    in_memory: read every record once (:meth:`Dataset.cache`).
    **builder_kwargs: passed to the builder (e.g. ``split_lists`` for TIMIT).

  Returns:
    :class:`TokenStream` for PTB, :class:`Dataset` otherwise. Batches hold
    ``inputs`` (B, T, D) float32 and ``labels`` (B,) int32 for classification, and
    ``inputs``/``targets`` (B, T, D), ``mask`` (B, T), ``lengths`` (B,) for next-step tasks.
  """
  kind, holdout = _check_load(name, split, source, pad_multiple)
  base_split = "train" if (holdout and split != "test") else split
  if source == "tfds":
    data_source, vocab = _builtin_source(_TFDS_BUILTIN[name], base_split, tfds_dir,
                                         download), None
    cache_dir = tfds_dir
  else:
    b = _prepared_builder(name, prepare_if_missing, data_dir=data_dir, tfds_dir=tfds_dir,
                          download=download, verify_checksums=verify_checksums,
                          **builder_kwargs)
    data_source = b.as_data_source(split=base_split)
    vocab, cache_dir = (b.info.metadata.get("vocab") if kind == "ptb" else None), b.data_dir
  if kind == "ptb":
    tokens = _tokens(data_source, (name, split, source, str(cache_dir)))
    return TokenStream(name=name, split=split, tokens=tokens, vocab=list(vocab))
  n = len(data_source)
  if holdout and split in ("train", "valid"):
    indices = holdout_split(n, valid_size, valid_seed)[split]
  else:
    indices = np.arange(n)
  transform, info = _transform_and_info(name, kind, base_split, permutation_seed=permutation_seed,
                                        noise_seed=noise_seed, pad_multiple=pad_multiple)
  ds = Dataset(name=name, split=split, source=data_source, indices=indices,
               transform=transform, info=info)
  return ds.cache() if in_memory else ds


def _check_load(name: str, split: str, source: str, pad_multiple: int) -> tuple[str, bool]:
  """``(kind, holdout)`` of a valid :func:`load` call (``ValueError`` otherwise)."""
  if name not in _REGISTRY:
    fail("load", "name", name, f"one of {DATASETS}")
  kind = _REGISTRY[name][2]
  holdout = kind in ("mnist", "cifar")
  allowed = ("train", "valid", "test", "train_full") if holdout else ("train", "valid", "test")
  if split not in allowed:
    fail("load", "split", split, f"one of {allowed} for {name}")
  if source not in ("lvf", "tfds") or (source == "tfds" and name not in _TFDS_BUILTIN):
    fail("load", "source", source, "'lvf', or 'tfds' for mnist/pmnist/cifar10/cifar10_noise")
  if pad_multiple < 1:
    fail("load", "pad_multiple", pad_multiple, "a positive integer")
  return kind, holdout


def _prepared_builder(name: str, prepare_if_missing: bool, **kwargs):
  """The builder of ``name``, prepared into its TFDS directory on first use."""
  def make():
    return builder(name, **kwargs)

  b = make()
  if not _is_prepared(b):
    if not prepare_if_missing:
      raise paths.MissingDataError(
          f"load: dataset {name!r} is not prepared in {b.data_dir}; call "
          f"lvf_jax.data.download_and_prepare({name!r}) or pass prepare_if_missing=True.")
    b = _download_and_prepare_once(name, make, kwargs.get("tfds_dir"), first=b)
  return b


def _tokens(data_source, key: tuple) -> np.ndarray:
  """The token array of a PTB split. Decoding ~42k TFDS records takes seconds; a process
  keeps each split's (read-only) array, keyed by the prepared dataset's directory."""
  tokens = _TOKENS.get(key)
  if tokens is None:
    recs = _get_many(data_source, range(len(data_source)))
    tokens = np.concatenate([np.asarray(r["tokens"], np.int32) for r in recs]) if recs \
        else np.zeros((0,), np.int32)
    tokens.flags.writeable = False
    _TOKENS[key] = tokens
  return tokens


def _transform_and_info(name: str, kind: str, base_split: str, *, permutation_seed: int,
                        noise_seed: int, pad_multiple: int):
  """The record transform of a dataset and its ``info`` (shapes, task, loss)."""
  if kind == "mnist":
    perm = mnist_permutation(permutation_seed) if name == "pmnist" else None
    return _mnist_transform(perm), dict(input_dim=1, seq_len=784, num_classes=10,
                                        task="classification", permutation=perm)
  if kind == "cifar":
    noise = name == "cifar10_noise"
    return _cifar_transform(noise, base_split, noise_seed), dict(
        input_dim=96 if noise else 3, seq_len=1000 if noise else 1024, num_classes=10,
        task="classification")
  if kind == "music":
    return _next_step_transform("roll", 88, pad_multiple), dict(
        input_dim=88, output_dim=88, task="next_step_binary", loss="music_nll")
  return _next_step_transform("features", 129, pad_multiple), dict(  # speech
      input_dim=129, output_dim=129, task="next_step_regression", loss="masked_mse")


def _is_prepared(b) -> bool:
  try:
    return bool(b.is_prepared())
  except Exception:  # pylint: disable=broad-except
    return False


def _builtin_source(tfds_name: str, split: str, tfds_dir, download: bool):
  """Data source of a TFDS built-in dataset prepared in array_record format."""
  data_dir = str(paths.tfds_data_dir(tfds_dir))
  try:
    return tfds.data_source(tfds_name, split=split, data_dir=data_dir, download=download,
                            builder_kwargs={"file_format": "array_record"})
  except Exception as e:  # pylint: disable=broad-except
    raise paths.MissingDataError(
        f"load(source='tfds'): could not open the built-in TFDS dataset {tfds_name!r} in "
        f"{data_dir} ({type(e).__name__}: {e}). TFDS's built-in {tfds_name} builder needs "
        "TensorFlow to *prepare* (tf.io.gfile, tf.image.encode_png): prepare it once on a "
        f"machine with TensorFlow (tfds.builder({tfds_name!r}, data_dir=..., "
        "file_format='array_record').download_and_prepare()) and copy the folder, or use "
        "source='lvf' (our TensorFlow-free builder).") from e


# ----------------------------------------------------------------------------------------------
# Batching

def batch_order(num_examples: int, seed: int, epoch: int, shuffle: bool = True) -> np.ndarray:
  """Example order of one epoch: ``default_rng([seed, epoch]).permutation(n)`` (or arange)."""
  if not shuffle:
    return np.arange(num_examples)
  return np.random.default_rng([int(seed), int(epoch)]).permutation(num_examples)


def num_batches(num_examples: int, batch_size: int, drop_remainder: bool = True) -> int:
  """Number of batches per epoch."""
  return num_examples // batch_size if drop_remainder else -(-num_examples // batch_size)


def batches(dataset: Dataset, batch_size: int, seed: int = 0, epoch: int = 0, *,
            shuffle: bool = True, drop_remainder: bool = True,
            start_batch: int = 0,
            rows: Optional[slice] = None) -> Iterator[Dict[str, np.ndarray]]:
  """Mini-batches of ``dataset`` for one epoch, deterministic given ``(seed, epoch)``.

  Args:
    dataset: a :class:`Dataset`.
    batch_size: examples per batch.
    seed, epoch: determine the order (:func:`batch_order`).
    shuffle: False for evaluation (file order).
    drop_remainder: drop the last partial batch (training). With False (evaluation) the last
      batch is padded to ``batch_size`` by repeating its first example, and every batch carries
      ``example_mask`` (B,) float32 (1 for real examples) so shapes stay static.
    start_batch: skip this many batches (resuming mid-epoch), without reading them.
    rows: read only these rows of every batch (a process's share of a batch split over
      several hosts); None: every row.
  """
  if batch_size < 1:
    fail("batches", "batch_size", batch_size, "a positive integer")
  n = len(dataset)
  order = batch_order(n, seed, epoch, shuffle)
  for k in range(start_batch, num_batches(n, batch_size, drop_remainder)):
    pos = order[k * batch_size:(k + 1) * batch_size]
    if drop_remainder:
      yield dataset.get_batch(pos if rows is None else pos[rows])
      continue
    real = pos.shape[0]
    if real < batch_size:
      pos = np.concatenate([pos, np.full(batch_size - real, pos[0], pos.dtype)])
    example_mask = np.zeros((batch_size,), np.float32)
    example_mask[:real] = 1.0
    if rows is not None:
      pos, example_mask = pos[rows], example_mask[rows]
    batch = dataset.get_batch(pos)
    batch["example_mask"] = example_mask
    if "mask" in batch:
      batch["mask"] = batch["mask"] * example_mask[:, None]
    yield batch


def prefetch(iterator: Iterator[Any], size: int = 2) -> Iterator[Any]:
  """Runs ``iterator`` in a background thread, keeping up to ``size`` items ready.

  Reading records and building batches (NumPy, array_record I/O) release the GIL for much of
  their work, so this overlaps data loading with the training step. Exceptions are re-raised
  in the consumer.
  """
  if size < 1:
    fail("prefetch", "size", size, "a positive integer")
  q: "queue.Queue" = queue.Queue(maxsize=size)
  done = object()
  stop = threading.Event()

  def worker():
    try:
      for item in iterator:
        while not stop.is_set():
          try:
            q.put((None, item), timeout=0.1)
            break
          except queue.Full:
            continue
        if stop.is_set():
          return
    except BaseException as e:  # pylint: disable=broad-except
      q.put((e, None))
      return
    q.put((None, done))

  thread = threading.Thread(target=worker, daemon=True)
  thread.start()
  try:
    while True:
      err, item = q.get()
      if err is not None:
        raise err
      if item is done:
        return
      yield item
  finally:
    stop.set()


class TBPTTBatch(NamedTuple):
  """One truncated-BPTT chunk.

  Contract: row ``b`` of chunk ``k + 1`` continues row ``b`` of chunk ``k`` in the token
  stream, so the model's final hidden state of chunk ``k`` is the initial state of chunk
  ``k + 1`` (stop its gradient). ``reset`` is True only for the first chunk of an epoch: start
  from the initial state there.

  Attributes:
    inputs: (B, T) int32 tokens.
    targets: (B, T) int32 next tokens.
    mask: (B, T) float32, 1 where the target is a real token (0 on padding).
    reset: start from a fresh state.
    index: chunk number within the epoch.
  """
  inputs: np.ndarray
  targets: np.ndarray
  mask: np.ndarray
  reset: bool
  index: int


def tbptt_layout(num_tokens: int, batch_size: int, drop_remainder: bool = False) -> int:
  """Row length (targets per row) of the TBPTT layout.

  The ``num_tokens - 1`` prediction targets are cut into ``batch_size`` contiguous rows.
  With ``drop_remainder=False`` rows have ``ceil((N-1)/B)`` targets and the tail of the last
  row is padded (masked), so every target appears exactly once per epoch; with True each row
  has ``floor((N-1)/B)`` targets and at most ``B-1`` final targets are dropped.
  """
  n_targets = num_tokens - 1
  if n_targets < batch_size:
    fail("tbptt_layout", "batch_size", batch_size,
          f"at most the number of targets ({n_targets})")
  return n_targets // batch_size if drop_remainder else -(-n_targets // batch_size)


def tbptt_batches(stream, batch_size: int, seq_len: int, *, drop_remainder: bool = False,
                  pad_id: int = 0) -> Iterator[TBPTTBatch]:
  """Truncated-BPTT chunks of a token stream (PTB), covering each target once per epoch.

  Args:
    stream: :class:`TokenStream` or 1-D int array.
    batch_size: rows processed in parallel (use 1 for an exact evaluation without padding).
    seq_len: truncation length (150 or 300 in the papers).
    drop_remainder: see :func:`tbptt_layout`; when True also the last chunk of a row is
      dropped if shorter than ``seq_len`` (all chunks are then full, mask all ones).
    pad_id: token id written on padded positions (masked out).

  Yields:
    :class:`TBPTTBatch` of static shape (batch_size, seq_len); the final chunk is padded and
    masked when the row length is not a multiple of ``seq_len``.
  """
  tokens = np.asarray(stream.tokens if isinstance(stream, TokenStream) else stream, np.int32)
  if tokens.ndim != 1:
    fail("tbptt_batches", "stream", f"shape {tokens.shape}", "a 1-D token stream")
  if seq_len < 1:
    fail("tbptt_batches", "seq_len", seq_len, "a positive integer")
  row = tbptt_layout(tokens.shape[0], batch_size, drop_remainder)
  n_targets = tokens.shape[0] - 1
  inputs = np.full((batch_size, row), pad_id, np.int32)
  targets = np.full((batch_size, row), pad_id, np.int32)
  mask = np.zeros((batch_size, row), np.float32)
  for b in range(batch_size):
    start = b * row
    stop = min(start + row, n_targets)
    if stop <= start:
      continue
    inputs[b, :stop - start] = tokens[start:stop]
    targets[b, :stop - start] = tokens[start + 1:stop + 1]
    mask[b, :stop - start] = 1.0
  n_chunks = row // seq_len if drop_remainder else -(-row // seq_len)
  for k in range(n_chunks):
    sl = slice(k * seq_len, (k + 1) * seq_len)
    x, y, m = inputs[:, sl], targets[:, sl], mask[:, sl]
    if x.shape[1] < seq_len:
      pad = seq_len - x.shape[1]
      x = np.pad(x, ((0, 0), (0, pad)), constant_values=pad_id)
      y = np.pad(y, ((0, 0), (0, pad)), constant_values=pad_id)
      m = np.pad(m, ((0, 0), (0, pad)))
    yield TBPTTBatch(inputs=x, targets=y, mask=m, reset=(k == 0), index=k)
