"""Training pipelines over the real datasets of :mod:`lvf_jax.data`.

``PIPELINES`` maps a ``config.task.name`` to a constructor ``(config, **options) ->
Pipeline`` (see :class:`lvf_jax.train.task_pipeline.Pipeline`). Every pipeline is host fed: the
batch of optimiser step ``s`` is a pure function of ``(config.train.seed, s)`` -- epoch
``s // batches_per_epoch``, batch ``s % batches_per_epoch`` of that epoch's order (read
directly with ``start_batch``) -- so a run resumed from a checkpoint sees exactly the batches
of an uninterrupted one.

Three pipeline classes cover the datasets:

* :class:`ClassificationPipeline` -- (permuted) sequential MNIST, pixel and noise-padded
  CIFAR-10: a last-state classifier, cross-entropy and accuracy. The validation split is held
  out of the training set (``valid_size``, ``valid_seed``); evaluation covers the whole split,
  the padded last batch weighted by its real examples (``example_mask``).
* :class:`LanguageModelPipeline` -- PTB characters (bits per character) and words
  (perplexity) with a token embedding and truncated BPTT: the hidden state of chunk ``k`` is
  the initial state of chunk ``k + 1`` (``TrainState.carry``) and is reset at the start of an
  epoch; evaluation threads the state through the whole split. Averages are weighted by the
  number of valid tokens.
* :class:`NextStepPipeline` -- polyphonic music (88 logits per step, frame NLL of
  Boulanger-Lewandowski et al. 2012) and speech frame prediction (129 log-magnitude bins, masked
  MSE; TIMIT and its FSDD stand-in). Variable-length batches pass ``seq_lengths`` to the model
  and averages are weighted by the number of valid frames.

Options (``config.task.options``) common to all: ``data_dir``, ``tfds_dir`` (default: the
environment variables of :mod:`lvf_jax.data.paths`); ``download`` (fetch raw files that are
not in ``data_dir`` where a public source exists; ``lvf-jax --download``); ``max_train_examples`` /
``max_eval_examples`` (``max_train_tokens`` / ``max_eval_tokens`` for PTB) use only the
beginning of a split, for smoke tests and quick runs. An unknown option raises ``ValueError``
listing the valid ones. ``configs/<dataset>.py`` build their configs with
:func:`lvf_jax.train.presets.dataset_config`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from lvf_jax._validation import check_optional_int, fail
from lvf_jax import data as data_lib
from lvf_jax.train import model_builder
from lvf_jax.train import task_pipeline
from lvf_jax.train.model_builder import ModelHead

Array = jax.Array

EVAL_SPLITS = {"validation": "valid", "valid": "valid", "test": "test", "train": "train"}




def _split_name(where: str, split: str) -> str:
  if split not in EVAL_SPLITS:
    fail(where, "split", split, f"one of {sorted(EVAL_SPLITS)}")
  return EVAL_SPLITS[split]


def _first(ds: data_lib.Dataset, n: Optional[int]) -> data_lib.Dataset:
  """The first ``n`` examples of a split (all if ``n`` is None)."""
  if n is None or n >= len(ds):
    return ds
  return dataclasses.replace(ds, indices=ds.indices[:n])


def _weighted_mean(values: Array, weights: Array) -> Array:
  w = weights.astype(values.dtype)
  return jnp.sum(values * w) / jnp.maximum(jnp.sum(w), 1.0)


def _take_rows(batch: dict, rows: Optional[slice]) -> dict:
  """``rows`` of every batch array of ``batch`` (all of it for ``None``); scalars, the same
  for every row, are kept."""
  if rows is None:
    return batch
  return {key: v if np.ndim(v) == 0 else v[rows] for key, v in batch.items()}


class _HostPipeline(task_pipeline.Pipeline):
  """Shared plumbing: the config's batch sizes and seed, ``(epoch, batch)`` of a step."""

  host_fed = True

  def __init__(self, config, name: str):
    t = config.train
    self.name = name
    self.batch_size = int(t.batch_size)
    self.eval_batch_size = int(t.get("eval_batch_size", 256))
    self.seed = int(t.seed)

  @property
  def batches_per_epoch(self) -> int:
    raise NotImplementedError

  def epoch_and_batch(self, step: int) -> tuple[int, int]:
    """``(epoch, batch index within the epoch)`` of optimiser step ``step``."""
    return divmod(int(step), self.batches_per_epoch)

  def _check_epoch(self, n: int, what: str):
    if n < 1:
      raise ValueError(
          f"{type(self).__name__}: config 'train.batch_size' ({self.batch_size}) leaves no full "
          f"training batch in the {what} of {self.name!r}; lower train.batch_size or raise "
          "task.options.max_train_examples / max_train_tokens.")


# ---------------------------------------------------------------------------------------------
# Classification: (p)sMNIST, pixel / noise-padded CIFAR-10


class ClassificationPipeline(_HostPipeline):
  """Sequence classification from the last state (sMNIST, pMNIST, CIFAR-10, noise CIFAR-10).

  Options:
    valid_size, valid_seed: validation hold-out of the training set (default 5000, 0).
    permutation_seed: pMNIST pixel permutation (default 92916).
    noise_seed: noise of 'cifar10_noise' (default 0).
    source: 'lvf' (default) or 'tfds' (TFDS's built-in mnist / cifar10 in array_record).
    data_dir, tfds_dir, max_train_examples, max_eval_examples: see the module docstring.
  """

  def __init__(self, config, name: str, *, valid_size: int = 5000, valid_seed: int = 0,
               permutation_seed: int = data_lib.PERMUTATION_SEED, noise_seed: int = 0,
               source: str = "lvf", data_dir: Optional[str] = None,
               tfds_dir: Optional[str] = None, max_train_examples: Optional[int] = None,
               max_eval_examples: Optional[int] = None, download: bool = False):
    super().__init__(config, name)
    where = f"ClassificationPipeline({name!r})"
    self.max_eval_examples = check_optional_int(where, "max_eval_examples", max_eval_examples)
    kw = dict(data_dir=data_dir, tfds_dir=tfds_dir, download=bool(download), source=source,
              valid_size=int(valid_size),
              valid_seed=int(valid_seed), permutation_seed=int(permutation_seed),
              noise_seed=int(noise_seed))
    self._load = functools.partial(data_lib.load, name, **kw)
    self.train = _first(self._load("train"),
                        check_optional_int(where, "max_train_examples", max_train_examples))
    info = self.train.info
    self.input_size = int(info["input_dim"])
    self.output_size = int(info["num_classes"])
    self.seq_len = int(info["seq_len"])
    self._check_epoch(self.batches_per_epoch, "training split")

  @property
  def batches_per_epoch(self) -> int:
    return data_lib.num_batches(len(self.train), self.batch_size, drop_remainder=True)

  @functools.lru_cache(maxsize=None)
  def split(self, split: str) -> data_lib.Dataset:
    """The (possibly truncated) dataset of an evaluation split ('validation' or 'test')."""
    name = _split_name("ClassificationPipeline.split", split)
    if name == "train":
      return self.train
    return _first(self._load(name), self.max_eval_examples)

  def describe(self) -> str:
    return (f"{self.name} ({len(self.train)} training sequences of {self.seq_len} steps x "
            f"{self.input_size}, {self.output_size} classes)")

  def baseline_loss(self) -> float:
    return math.log(self.output_size)  # uniform prediction: a model that learned nothing

  def model_head(self) -> ModelHead:
    return ModelHead("last_state", self.output_size)

  def host_batch(self, step: int, rows: Optional[slice] = None) -> dict:
    epoch, k = self.epoch_and_batch(step)
    b = next(data_lib.batches(self.train, self.batch_size, self.seed, epoch, start_batch=k,
                              rows=rows))
    return {"inputs": b["inputs"], "labels": b["labels"],
            "example_mask": np.ones((b["labels"].shape[0],), np.float32)}

  def eval_batches(self, split: str):
    ds = self.split(split)
    it = data_lib.batches(ds, min(self.eval_batch_size, len(ds)), shuffle=False,
                          drop_remainder=False)
    keys = ("inputs", "labels", "example_mask")
    return data_lib.prefetch(({k: b[k] for k in keys} for b in it), size=2)

  def forward(self, model, variables, batch, carry, *, deterministic, rngs, mutable):
    del carry
    logits, mutated = task_pipeline.apply_model(model, variables, batch["inputs"],
                                                deterministic=deterministic, rngs=rngs,
                                                mutable=mutable)
    return (logits, None), mutated

  def loss(self, outputs: Array, batch) -> Array:
    logp = jax.nn.log_softmax(outputs, axis=-1)
    nll = -jnp.take_along_axis(logp, batch["labels"][:, None].astype(jnp.int32), axis=-1)[:, 0]
    return _weighted_mean(nll, batch["example_mask"])

  def metrics(self, outputs: Array, batch) -> dict:
    correct = (jnp.argmax(outputs, axis=-1) == batch["labels"]).astype(outputs.dtype)
    return {"accuracy": _weighted_mean(correct, batch["example_mask"])}

  def batch_weight(self, batch) -> Array:
    return jnp.sum(batch["example_mask"].astype(jnp.float32))


# ---------------------------------------------------------------------------------------------
# Language modelling with truncated BPTT: PTB characters / words


class LanguageModelPipeline(_HostPipeline):
  """Next-token prediction on PTB with truncated BPTT (hidden state carried across chunks).

  The training stream is cut into ``batch_size`` contiguous rows
  (:func:`lvf_jax.data.tbptt_batches`); chunk ``k`` of an epoch is step ``epoch * n + k``.
  The final state of a chunk is the initial state of the next one (gradient stopped), reset
  to zeros on the first chunk of every epoch. Evaluation runs each split once, in order, with
  the state threaded through all its chunks (``eval_batch_size`` rows).

  Options:
    bptt: truncation length (150 or 300 in the papers; default 150).
    embed_dim: token embedding size (default: the vocabulary size for characters, 400 for
      words).
    max_train_tokens, max_eval_tokens: use only the first tokens of a split (smoke tests).
    data_dir, tfds_dir: see the module docstring.
  """

  def __init__(self, config, name: str, *, bptt: int = 150, embed_dim: Optional[int] = None,
               data_dir: Optional[str] = None, tfds_dir: Optional[str] = None,
               max_train_tokens: Optional[int] = None, max_eval_tokens: Optional[int] = None,
               download: bool = False):
    super().__init__(config, name)
    where = f"LanguageModelPipeline({name!r})"
    self.bptt = check_optional_int(where, "bptt", bptt)
    if self.bptt is None:
      fail(where, "bptt", bptt, "a positive integer")
    self.max_eval_tokens = check_optional_int(where, "max_eval_tokens", max_eval_tokens)
    self.config = config
    self._load = functools.partial(data_lib.load, name, data_dir=data_dir, tfds_dir=tfds_dir,
                                   download=bool(download))
    self.train = self._truncate(self._load("train"),
                                check_optional_int(where, "max_train_tokens", max_train_tokens))
    self.vocab_size = self.train.vocab_size
    default_embed = self.vocab_size if name == "ptb_char" else 400
    self.embed_dim = check_optional_int(where, "embed_dim", embed_dim) or default_embed
    self.input_size = self.vocab_size
    self.output_size = self.vocab_size
    self.seq_len = self.bptt
    if len(self.train) - 1 < self.batch_size:
      self._check_epoch(0, "token stream")
    self._chunks = list(data_lib.tbptt_batches(self.train, self.batch_size, self.bptt))
    self._check_epoch(len(self._chunks), "token stream")

  @staticmethod
  def _truncate(stream: data_lib.TokenStream, n: Optional[int]) -> data_lib.TokenStream:
    if n is None or n >= len(stream):
      return stream
    return dataclasses.replace(stream, tokens=stream.tokens[:n])

  @property
  def batches_per_epoch(self) -> int:
    return len(self._chunks)

  @functools.lru_cache(maxsize=None)
  def split(self, split: str) -> data_lib.TokenStream:
    name = _split_name("LanguageModelPipeline.split", split)
    if name == "train":
      return self.train
    return self._truncate(self._load(name), self.max_eval_tokens)

  def describe(self) -> str:
    unit = "characters" if self.name == "ptb_char" else "words"
    return (f"{self.name} ({len(self.train)} training {unit}, vocabulary {self.vocab_size}, "
            f"truncated BPTT {self.bptt})")

  @functools.lru_cache(maxsize=None)
  def baseline_loss(self) -> float:
    """Cross-entropy (nats) of the training unigram distribution: a model without memory."""
    counts = np.bincount(self.train.tokens, minlength=self.vocab_size).astype(np.float64)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())

  def init_inputs(self) -> Array:
    return jnp.zeros((1, self.bptt), jnp.int32)

  def model_head(self) -> ModelHead:
    return ModelHead("per_step", self.vocab_size, vocab_size=self.vocab_size,
                     embed_dim=self.embed_dim)

  def initial_carry(self, eval: bool = False):  # noqa: A002 - the loop's keyword
    return model_builder.initial_carries(self.config,
                                         self.eval_batch_size if eval else self.batch_size)

  def carry_for_batch(self, carry, batch):
    return task_pipeline.reset_carry(carry, batch["reset"])

  @staticmethod
  def _as_batch(chunk: data_lib.TBPTTBatch) -> dict:
    return {"inputs": chunk.inputs, "targets": chunk.targets, "mask": chunk.mask,
            "reset": np.asarray(chunk.reset)}

  def host_batch(self, step: int, rows: Optional[slice] = None) -> dict:
    _, k = self.epoch_and_batch(step)  # the layout is the same every epoch
    return _take_rows(self._as_batch(self._chunks[k]), rows)

  def eval_batches(self, split: str):
    stream = self.split(split)
    rows = self.eval_batch_size  # fixed: the carry of initial_carry(eval=True) has this many
    if len(stream) - 1 < rows:
      raise ValueError(
          f"LanguageModelPipeline: config 'train.eval_batch_size' ({self.eval_batch_size}) "
          f"exceeds the {len(stream) - 1} targets of the {split} split of {self.name!r}.")
    return (self._as_batch(c) for c in data_lib.tbptt_batches(stream, rows, self.bptt))

  def forward(self, model, variables, batch, carry, *, deterministic, rngs, mutable):
    (logits, carries), mutated = task_pipeline.apply_model(
        model, variables, batch["inputs"], deterministic=deterministic, rngs=rngs,
        mutable=mutable, initial_carries=carry, return_carries=True)
    return (logits, carries), mutated

  def loss(self, outputs: Array, batch) -> Array:
    return data_lib.masked_cross_entropy(outputs, batch["targets"], batch["mask"])

  def metrics(self, outputs: Array, batch) -> dict:
    correct = (jnp.argmax(outputs, axis=-1) == batch["targets"]).astype(outputs.dtype)
    return {"accuracy": _weighted_mean(correct, batch["mask"])}

  def batch_weight(self, batch) -> Array:
    return jnp.sum(batch["mask"].astype(jnp.float32))

  def summarize(self, metrics: dict) -> dict:
    out = dict(metrics)
    if self.name == "ptb_char":
      out["bpc"] = float(data_lib.bits_per_character(metrics["loss"]))
    else:
      out["perplexity"] = float(np.exp(metrics["loss"]))
    return out


# ---------------------------------------------------------------------------------------------
# Next-step prediction: polyphonic music, speech frames


_SEQ_NLL, _SEQS = "sequence_nll_sum_per_frame", "sequences_per_frame"
#: ``train_nll`` options of :class:`NextStepPipeline`.
TRAIN_NLL = ("per_frame", "frame_weighted")


class NextStepPipeline(_HostPipeline):
  """Per-step prediction of the next frame of variable-length sequences.

  Music (JSB, MuseData, Nottingham, Piano-midi): 88 logits per step, frame NLL
  (:func:`lvf_jax.data.music_nll`); evaluation also reports ``nll_per_sequence``, the
  mean of each sequence's NLL per frame. Speech (FSDD, TIMIT): 129 log-magnitude bins per step,
  masked MSE (:func:`lvf_jax.data.masked_mse`). Batches are padded (to a multiple of
  ``pad_multiple`` steps, which bounds the number of compiled shapes) and the true lengths are
  passed to the model as ``seq_lengths``.

  Options:
    pad_multiple: pad each batch to a multiple of this many steps (default 32).
    max_len: crop every sequence to its first ``max_len`` predicted frames (default None =
      whole sequences; for smoke tests and quick runs).
    mse_per: speech only: 'element' (default; mean over frames and bins) or 'frame'.
    train_nll: music only: the NLL a training step minimises. 'per_frame' (default): the
      batch's mean frame NLL, so every batch (one piece at batch 1) weighs the same whatever
      its length; 'frame_weighted': the batch's NLL summed over its frames, divided by the
      constant ``batch_size * (mean predicted frames of a training piece)``, so that every
      frame weighs the same, as in the evaluation's ``loss`` (the summed NLL of the TCN
      reference code, Bai, Kolter, Koltun 2018, arXiv:1803.01271, scaled to keep the
      learning rate's meaning).
    standardize_inputs: speech only: feed the model ``(x - mean) / std`` with the per-bin
      statistics of the training frames (default False). The targets and the metric keep
      their units.
    center_targets: speech only: the model predicts the deviation from the per-bin training
      mean, ``prediction = outputs + mean`` (default False) -- equivalent to initialising the
      head's bias at the mean, which otherwise takes thousands of steps to learn (the
      log-magnitudes are far from 0). The loss is the MSE of ``prediction``.
    in_memory: read every record once (default True).
    data_dir, tfds_dir, max_train_examples, max_eval_examples: see the module docstring.
  """

  def __init__(self, config, name: str, *, pad_multiple: int = 32,
               max_len: Optional[int] = None, mse_per: str = "element",
               train_nll: str = "per_frame", standardize_inputs: bool = False,
               center_targets: bool = False,
               in_memory: bool = True,
               data_dir: Optional[str] = None, tfds_dir: Optional[str] = None,
               max_train_examples: Optional[int] = None,
               max_eval_examples: Optional[int] = None, download: bool = False):
    super().__init__(config, name)
    where = f"NextStepPipeline({name!r})"
    self.pad_multiple = check_optional_int(where, "pad_multiple", pad_multiple)
    if self.pad_multiple is None:
      fail(where, "pad_multiple", pad_multiple, "a positive integer")
    self.max_len = check_optional_int(where, "max_len", max_len)
    self.max_eval_examples = check_optional_int(where, "max_eval_examples", max_eval_examples)
    if mse_per not in ("element", "frame"):
      fail(where, "mse_per", mse_per, "'element' or 'frame'")
    self.mse_per = mse_per
    if train_nll not in TRAIN_NLL:
      fail(where, "train_nll", train_nll, " or ".join(repr(t) for t in TRAIN_NLL))
    self.train_nll = train_nll
    self._load = functools.partial(data_lib.load, name, data_dir=data_dir, tfds_dir=tfds_dir,
                                   download=bool(download), pad_multiple=self.pad_multiple,
                                   in_memory=bool(in_memory))
    self.train = self._crop(self._load("train"),
                            check_optional_int(where, "max_train_examples", max_train_examples))
    info = self.train.info
    self.is_music = info["loss"] == "music_nll"
    self.input_size = int(info["input_dim"])
    self.output_size = int(info["output_dim"])
    self.seq_len = self.pad_multiple  # shape of init_inputs; batches have their own lengths
    self._key = "roll" if self.is_music else "features"
    self.standardize_inputs = bool(standardize_inputs) and not self.is_music
    self.center_targets = bool(center_targets) and not self.is_music
    if self.standardize_inputs or self.center_targets:
      frames = self._train_frames()
      self.frame_mean = frames.mean(axis=0).astype(np.float32)
      self.frame_std = np.maximum(frames.std(axis=0), 1e-3).astype(np.float32)
    if self.train_nll != "per_frame" and not self.is_music:
      fail(where, "train_nll", train_nll, "'per_frame' for a speech data set")
    self._check_epoch(self.batches_per_epoch, "training split")

  def _crop(self, ds: data_lib.Dataset, n: Optional[int]) -> data_lib.Dataset:
    ds = _first(ds, n)
    if self.max_len is None:
      return ds
    key, keep, inner = ("roll" if ds.info["loss"] == "music_nll" else "features",
                        self.max_len + 1, ds.transform)

    def transform(recs, rec_idx):
      return inner([{**r, key: np.asarray(r[key])[:keep]} for r in recs], rec_idx)

    return dataclasses.replace(ds, transform=transform)

  @property
  def batches_per_epoch(self) -> int:
    return data_lib.num_batches(len(self.train), self.batch_size, drop_remainder=True)

  @functools.lru_cache(maxsize=None)
  def split(self, split: str) -> data_lib.Dataset:
    name = _split_name("NextStepPipeline.split", split)
    if name == "train":
      return self.train
    return self._crop(self._load(name), self.max_eval_examples)

  def describe(self) -> str:
    kind = "piano-roll" if self.is_music else "spectrogram"
    crop = f", cropped to {self.max_len} steps" if self.max_len else ""
    return f"{self.name} ({len(self.train)} training {kind} sequences{crop})"

  def _train_targets(self) -> list[np.ndarray]:
    """The predicted (target) frames of each training sequence, in its stored dtype."""
    stop = self.max_len + 1 if self.max_len else None
    return [np.asarray(r[self._key])[1:stop]
            for r in self.train.records(range(len(self.train)))]

  def _train_frames(self) -> np.ndarray:
    """Every predicted (target) frame of the training split, ``(frames, D)`` float64."""
    return np.concatenate(self._train_targets()).astype(np.float64)

  @functools.lru_cache(maxsize=None)
  def baseline_loss(self) -> float:
    """Loss of the best constant prediction fitted on the training frames (no memory)."""
    y = self._train_frames()
    if self.is_music:
      p = np.clip(y.mean(axis=0), 1e-7, 1 - 1e-7)
      return float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).sum(axis=1).mean())
    se = np.square(y - y.mean(axis=0)).sum(axis=1)
    return float(se.mean() / (y.shape[1] if self.mse_per == "element" else 1))

  def init_inputs(self) -> Array:
    return jnp.zeros((1, self.pad_multiple, self.input_size), jnp.float32)

  def model_head(self) -> ModelHead:
    return ModelHead("per_step", self.output_size)

  _KEYS = ("inputs", "targets", "mask", "lengths")

  def host_batch(self, step: int, rows: Optional[slice] = None) -> dict:
    """The step's batch; with ``rows``, those rows of it, padded to the whole batch's length
    (which depends on every sequence of the batch, so all of them are read)."""
    epoch, k = self.epoch_and_batch(step)
    b = next(data_lib.batches(self.train, self.batch_size, self.seed, epoch, start_batch=k))
    return _take_rows({key: b[key] for key in self._KEYS}, rows)

  def eval_batches(self, split: str):
    ds = self.split(split)
    it = data_lib.batches(ds, min(self.eval_batch_size, len(ds)), shuffle=False,
                          drop_remainder=False)
    return ({k: b[k] for k in self._KEYS} for b in it)  # mask includes example_mask

  def forward(self, model, variables, batch, carry, *, deterministic, rngs, mutable):
    del carry
    x = batch["inputs"]
    if self.standardize_inputs:
      mean = jnp.asarray(self.frame_mean)[None, None, :]
      x = (x - mean) / jnp.asarray(self.frame_std)[None, None, :]
    out, mutated = task_pipeline.apply_model(model, variables, x, deterministic=deterministic,
                                             rngs=rngs, mutable=mutable,
                                             seq_lengths=batch["lengths"])
    if self.center_targets:
      out = out + jnp.asarray(self.frame_mean, out.dtype)[None, None, :]
    return (out, None), mutated

  def loss(self, outputs: Array, batch) -> Array:
    if self.is_music:
      return data_lib.music_nll(outputs, batch["targets"], batch["mask"])
    return data_lib.masked_mse(outputs, batch["targets"], batch["mask"], per=self.mse_per)

  def train_loss(self, outputs: Array, batch) -> Array:
    if self.train_nll == "per_frame":
      return self.loss(outputs, batch)
    frames = jnp.sum(batch["mask"].astype(outputs.dtype))
    scale = frames / (outputs.shape[0] * self.mean_train_frames())
    return self.loss(outputs, batch) * scale.astype(outputs.dtype)

  @functools.lru_cache(maxsize=None)
  def mean_train_frames(self) -> float:
    """Mean number of predicted frames of a training sequence."""
    return float(np.mean([len(t) for t in self._train_targets()]))

  def metrics(self, outputs: Array, batch) -> dict:
    del outputs, batch
    return {}

  def eval_metrics(self, outputs: Array, batch) -> dict:
    """Music: also the sums behind ``nll_per_sequence`` (see :meth:`summarize`), each divided
    by the batch's frame count so that the split's frame-weighted mean of batches keeps
    their ratio."""
    if not self.is_music:
      return {}
    frames = jnp.maximum(self.batch_weight(batch), 1.0)
    has_frames = (jnp.sum(batch["mask"], axis=-1) > 0).astype(jnp.float32)
    nll = data_lib.music_nll_per_sequence(outputs, batch["targets"], batch["mask"])
    return {_SEQ_NLL: jnp.sum(nll.astype(jnp.float32)) / frames,  # 0 for padded rows
            _SEQS: jnp.sum(has_frames) / frames}

  def batch_weight(self, batch) -> Array:
    return jnp.sum(batch["mask"].astype(jnp.float32))

  def summarize(self, metrics: dict) -> dict:
    """Music: ``nll_per_sequence``, the mean over the split's sequences of each one's NLL per
    frame (:func:`lvf_jax.data.music_nll_per_sequence`); ``loss`` is the NLL per frame of
    the whole split."""
    out = {k: v for k, v in metrics.items() if k not in (_SEQ_NLL, _SEQS)}
    if _SEQ_NLL in metrics:
      out["nll_per_sequence"] = metrics[_SEQ_NLL] / max(metrics[_SEQS], 1e-30)
    return out


def _constructor(cls, name: str):
  """``(config, **options) -> cls(config, name, **options)``; unknown options list the valid."""
  allowed = tuple(p for p in inspect.signature(cls.__init__).parameters
                  if p not in ("self", "config", "name"))

  def make(config, **options):
    unknown = sorted(set(options) - set(allowed))
    if unknown:
      raise ValueError(
          f"{cls.__name__}({name!r}): unknown config field(s) 'task.options.{unknown[0]}'"
          f"{' (and ' + str(unknown[1:]) + ')' if unknown[1:] else ''}; the options of "
          f"{name!r} are {sorted(allowed)}.")
    return cls(config, name, **options)

  make.options = allowed
  return make


PIPELINES: dict = {
    **{n: _constructor(ClassificationPipeline, n)
       for n in ("mnist", "pmnist", "cifar10", "cifar10_noise")},
    **{n: _constructor(LanguageModelPipeline, n) for n in ("ptb_char", "ptb_word")},
    **{n: _constructor(NextStepPipeline, n)
       for n in ("jsb", "musedata", "nottingham", "piano_midi", "fsdd", "timit")},
}
