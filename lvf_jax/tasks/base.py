"""Shared machinery of the synthetic long-memory tasks (copy, adding, denoise, parenthesis).

Conventions common to every task in :mod:`lvf_jax.tasks`:

* ``task.sample(key, batch_size)`` is pure and jit-able (``batch_size`` must be a static
  Python int) and returns a :class:`Batch`:

  - ``inputs``: ``float32`` array ``(batch, seq_len, input_size)`` -- one-hot tokens or real
    features, ready for an RNN scanned over axis 1;
  - ``targets``: ``int32`` class labels (classification tasks) or ``float32`` values (adding);
  - ``mask``: ``float32`` array ``(batch, seq_len)``, the weight of each time step in the
    loss (all ones for the per-step tasks, a one at the last step for the adding task).

* Model outputs are always passed as ``(batch, seq_len, output_size)`` (one output per input
  step, as produced by a readout applied to every hidden state); ``task.loss(outputs, batch)``
  returns a scalar and ``task.metrics(outputs, batch)`` a dict of scalars with at least
  ``'loss'``.

* ``task.baseline_loss()`` is the loss of the best *input-independent* predictor, i.e. the
  best predictor that may depend on the time step but not on the sequence (the "no-memory"
  baseline of the papers); it is a Python float, to be printed next to results.

* ``task.fixed_split('validation' | 'test', size)`` returns a deterministic batch drawn from a
  fixed seed (different seeds for validation and test, never derived from a training key).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from lvf_jax import _validation

Array = jax.Array

#: Seeds of the fixed evaluation splits (``jax.random.key(seed)``), shared by all tasks. They
#: are fixed constants so that validation/test sets never depend on the training key.
SPLIT_SEEDS = {"validation": 1_000_003, "test": 2_000_029}


class Batch(NamedTuple):
  """One batch of a synthetic task.

  Attributes:
    inputs: ``float32`` array ``(batch, seq_len, input_size)``.
    targets: ``int32`` labels ``(batch, seq_len)`` / ``(batch, seq_len, n)`` or ``float32``
      regression targets ``(batch,)``; see each task's docstring.
    mask: ``float32`` array ``(batch, seq_len)``: per-step weight in the loss.
  """
  inputs: Array
  targets: Array
  mask: Array




def check_outputs(cls: str, outputs: Any, shape: tuple[int, ...]) -> None:
  """Raises if ``outputs`` does not have the given (static) shape or is not floating."""
  got = tuple(np.shape(outputs))
  if got != tuple(shape):
    raise ValueError(
        f"{cls}.loss: argument 'outputs' must have shape (batch, seq_len, output_size) = "
        f"{tuple(shape)}; got {got}.")
  if not jnp.issubdtype(jnp.result_type(outputs), jnp.floating):
    raise ValueError(
        f"{cls}.loss: argument 'outputs' must be floating; got dtype "
        f"{jnp.result_type(outputs)}.")


def masked_mean(values: Array, mask: Array) -> Array:
  """``sum(values * mask) / sum(mask)`` over all axes (``values`` and ``mask`` same shape)."""
  mask = mask.astype(values.dtype)
  return jnp.sum(values * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def cross_entropy(logits: Array, labels: Array) -> Array:
  """Per-position softmax cross-entropy ``-log softmax(logits)[label]`` (natural log)."""
  logp = jax.nn.log_softmax(logits, axis=-1)
  return -jnp.take_along_axis(logp, labels[..., None].astype(jnp.int32), axis=-1)[..., 0]


def uniform_ints(u: Array, low: int, high: int) -> Array:
  """Maps ``u ~ U[0, 1)`` (float) to integers uniform on ``[low, high)`` (``int32``).

  ``floor(u * n)`` with ``n = high - low``; JAX's float32 uniforms take ``2^23`` equally likely
  values, so each integer has probability ``1/n`` up to a relative error ``< n 2^-23``. The
  generators draw all their randomness as one uniform array (cheaper to compile on CPU than
  several ``jax.random.randint`` calls).
  """
  n = high - low
  return low + jnp.minimum(jnp.floor(u * n).astype(jnp.int32), n - 1)


def entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
  """Shannon entropy (nats) of probability vectors, with ``0 log 0 = 0`` (NumPy, float64)."""
  p = np.asarray(p, np.float64)
  logp = np.log(np.where(p > 0, p, 1.0))
  return -np.sum(p * logp, axis=axis)


@dataclasses.dataclass(frozen=True)
class SyntheticTask:
  """Base class of the synthetic tasks (frozen, hashable: usable as a static jit argument).

  Subclasses define ``name``, ``PAPER_LENGTHS``, the ``seq_len``, ``input_size``,
  ``output_size`` and ``loss_type`` properties, ``baseline_loss`` and the unchecked pure
  ``_sample``, ``_loss``, ``_metrics``; the public ``sample``, ``loss`` and ``metrics`` check
  their arguments statically and call those through ``jax.jit`` with the task as a static
  argument (one compilation per task, batch size and shapes, also when called eagerly; under
  an outer ``jit``/``grad``/``vmap`` the nested jit is simply inlined).

  ``loss_type`` is one of

  * ``'cross_entropy_all_steps'``: softmax CE (nats) averaged over every step and sequence
    (copy, denoise);
  * ``'mse_last'``: squared error of the output at the last step, averaged over sequences
    (adding);
  * ``'onehot_mse_all_steps'``: squared error between the outputs and the one-hot targets,
    averaged over steps, sequences and output units (parenthesis, reference setting);
  * ``'cross_entropy_per_type_all_steps'``: softmax CE per bracket type, averaged over types,
    steps and sequences (parenthesis, ``loss_kind='cross_entropy'``).
  """

  name: ClassVar[str] = "synthetic"
  PAPER_LENGTHS: ClassVar[tuple[int, ...]] = ()

  # -- to be provided by subclasses ---------------------------------------------------------
  @property
  def seq_len(self) -> int:  # pragma: no cover - abstract
    raise NotImplementedError

  @property
  def input_size(self) -> int:  # pragma: no cover - abstract
    raise NotImplementedError

  @property
  def output_size(self) -> int:  # pragma: no cover - abstract
    raise NotImplementedError

  @property
  def loss_type(self) -> str:  # pragma: no cover - abstract
    raise NotImplementedError

  def baseline_loss(self) -> float:  # pragma: no cover - abstract
    raise NotImplementedError

  def _sample(self, key: Array, batch_size: int) -> Batch:  # pragma: no cover - abstract
    raise NotImplementedError

  def _loss(self, outputs: Array, batch: Batch) -> Array:  # pragma: no cover - abstract
    raise NotImplementedError

  def _metrics(self, outputs: Array, batch: Batch) -> dict[str, Array]:  # pragma: no cover
    raise NotImplementedError

  # -- public API (argument checks, then a jitted call; nested jit is free under jit) ------
  def sample(self, key: Array, batch_size: int) -> Batch:
    """Draws a batch of ``batch_size`` sequences from ``key`` (pure; jit-able with
    ``batch_size`` static). The same ``key`` always gives the same batch."""
    batch_size = _validation.check_int(f"{type(self).__name__}.sample", "batch_size", batch_size, 1)
    return _sample_jit(self, key, batch_size)

  def loss(self, outputs: Array, batch: Batch) -> Array:
    """Scalar training loss of ``outputs (batch, seq_len, output_size)``; see ``loss_type``."""
    self._check_outputs(outputs, batch)
    return _loss_jit(self, outputs, batch)

  def loss_on_steps(self, outputs: Array, batch: Batch) -> Array:
    """The training loss of ``outputs (batch, t, output_size)`` for ``t`` consecutive steps
    of the task's sequences, ``batch`` holding those steps' inputs, targets and mask
    (truncated BPTT): the every-step losses average over the given steps; ``'mse_last'``
    reads the last given step (meaningful for the chunk that ends the sequences). Only the
    batch size and output width are checked."""
    b = int(np.shape(batch.inputs)[0])
    check_outputs(type(self).__name__, outputs,
                  (b, int(np.shape(outputs)[1]), self.output_size))
    return _loss_jit(self, outputs, batch)

  def metrics(self, outputs: Array, batch: Batch) -> dict[str, Array]:
    """Dict of metrics of ``outputs`` (scalars, always with ``'loss'``; the parenthesis task
    adds a ``(3,)`` per-type accuracy)."""
    self._check_outputs(outputs, batch)
    return _metrics_jit(self, outputs, batch)

  # -- shared -------------------------------------------------------------------------------
  def _check_outputs(self, outputs: Any, batch: Batch) -> None:
    b = int(np.shape(batch.inputs)[0])
    check_outputs(type(self).__name__, outputs, (b, self.seq_len, self.output_size))

  def fixed_split(self, split: str, size: int) -> Batch:
    """A deterministic evaluation batch of ``size`` sequences.

    Args:
      split: ``'validation'`` or ``'test'``; each uses its own fixed seed
        (:data:`SPLIT_SEEDS`), independent of any training key.
      size: number of sequences.

    Returns:
      ``self.sample(jax.random.key(SPLIT_SEEDS[split]), size)``: identical across calls and
      runs for a given JAX version and PRNG implementation (default ``threefry2x32``). Sizes
      are not nested: ``fixed_split(s, 100)`` is not a prefix of ``fixed_split(s, 1000)``.
    """
    cls = f"{type(self).__name__}.fixed_split"
    _validation.check_choice(cls, "split", split, tuple(SPLIT_SEEDS))
    size = _validation.check_int(cls, "size", size, 1)
    return self.sample(jax.random.key(SPLIT_SEEDS[split]), size)

  def split_baseline_loss(self, split: str, size: int) -> float:
    """The no-memory loss on ``fixed_split(split, size)``, the set a run is evaluated on.

    Here the expectation :meth:`baseline_loss`, exact for a task that gives a no-memory model
    the same loss on every set of sequences (copy and denoise: each sequence recalls the same
    number of symbols, each at ``ln(num_symbols)``); a task whose no-memory loss depends on
    the sequences drawn overrides it with the split's own value (:class:`AddingTask`,
    :class:`ParenthesisTask`), which differs from the expectation by the sampling of ``size``
    sequences.

    Args:
      split: ``'validation'`` or ``'test'``.
      size: number of sequences of the split.
    """
    cls = f"{type(self).__name__}.split_baseline_loss"
    _validation.check_choice(cls, "split", split, tuple(SPLIT_SEEDS))
    _validation.check_int(cls, "size", size, 1)
    return self.baseline_loss()

  def options(self) -> dict[str, Any]:
    """The task's options (dataclass fields) as a dict."""
    return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

  def describe(self) -> str:
    """One line naming the task, its options, length and no-memory baseline loss."""
    opts = ", ".join(f"{k}={v!r}" for k, v in self.options().items())
    return (f"{self.name}({opts}): seq_len={self.seq_len}, loss={self.loss_type}, "
            f"no-memory baseline={self.baseline_loss():.6g}")


@functools.partial(jax.jit, static_argnums=(0, 2))
def _sample_jit(task: SyntheticTask, key: Array, batch_size: int) -> Batch:
  return task._sample(key, batch_size)  # pylint: disable=protected-access


@functools.partial(jax.jit, static_argnums=0)
def _loss_jit(task: SyntheticTask, outputs: Array, batch: Batch) -> Array:
  return task._loss(outputs, batch)  # pylint: disable=protected-access


@functools.partial(jax.jit, static_argnums=0)
def _metrics_jit(task: SyntheticTask, outputs: Array, batch: Batch) -> dict[str, Array]:
  return task._metrics(outputs, batch)  # pylint: disable=protected-access


class RecallLossMixin:
  """What the tasks that output ``K`` symbols in their last ``K`` steps after a marker (copy,
  denoise) share: sequences of ``T + 2K`` one-hot tokens over ``num_symbols + 2`` ids
  (blank/noise, symbols, marker), ``num_symbols + 1`` classes, cross-entropy over all steps,
  accuracy over the last ``K`` outputs, no-memory baseline ``K ln(num_symbols) / seq_len``,
  and the batch assembly of ``encode``."""

  @property
  def seq_len(self) -> int:
    return self.T + 2 * self.K

  @property
  def input_size(self) -> int:
    return self.num_symbols + 2

  @property
  def output_size(self) -> int:
    return self.num_symbols + 1

  @property
  def loss_type(self) -> str:
    return "cross_entropy_all_steps"

  def _loss(self, outputs: Array, batch: Batch) -> Array:
    """Mean softmax cross-entropy over all steps; ``outputs`` are logits
    ``(batch, seq_len, output_size)``."""
    return masked_mean(cross_entropy(outputs, batch.targets), batch.mask)

  def _metrics(self, outputs: Array, batch: Batch) -> dict[str, Array]:
    """``loss`` and ``accuracy`` (fraction of the last ``K`` outputs whose argmax is right)."""
    loss = self._loss(outputs, batch)
    pred = jnp.argmax(outputs[:, -self.K:, :], axis=-1).astype(jnp.int32)
    acc = jnp.mean((pred == batch.targets[:, -self.K:]).astype(jnp.float32))
    return {"loss": loss, "accuracy": acc}

  def baseline_loss(self) -> float:
    """``K ln(num_symbols) / seq_len`` (derivations in the task modules' docstrings)."""
    return self.K * math.log(self.num_symbols) / self.seq_len

  def _check_k_columns(self, fn: str, name: str, arr: Array) -> Array:
    """``arr`` as ``int32`` after checking its shape ``(batch, K)``."""
    arr = jnp.asarray(arr)
    if arr.ndim != 2 or arr.shape[1] != self.K:
      raise ValueError(f"{fn}: argument '{name}' must have shape (batch, K={self.K}); "
                       f"got {arr.shape}.")
    return arr.astype(jnp.int32)

  def _recall_batch(self, tokens: Array, recalled: Array) -> Batch:
    """The batch of input ``tokens (batch, seq_len)`` whose last ``K`` targets are
    ``recalled (batch, K)`` (zero targets before): one-hot inputs, mask all ones."""
    b = tokens.shape[0]
    targets = jnp.concatenate([jnp.zeros((b, self.seq_len - self.K), jnp.int32), recalled],
                              axis=1)
    inputs = jax.nn.one_hot(tokens, self.input_size, dtype=jnp.float32)
    return Batch(inputs, targets, jnp.ones((b, self.seq_len), jnp.float32))
