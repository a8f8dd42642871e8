"""The task pipeline: the protocol between a task and the training loop, and the pipelines of
the synthetic tasks (whole sequences, or chunks under truncated BPTT).

A pipeline feeds batches and scores outputs; the model it asks for is described by its
:meth:`Pipeline.model_head` and built by :mod:`lvf_jax.train.model_builder`. The pipelines of
the real datasets (:mod:`lvf_jax.train.dataset_pipelines`) implement the same protocol.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp

from lvf_jax import tasks as tasks_lib
from lvf_jax.train import model_builder
from lvf_jax.train.model_builder import ModelHead

Array = jax.Array

__all__ = ["ChunkBatch", "Pipeline", "SyntheticPipeline", "TruncatedSyntheticPipeline",
           "apply_model", "check_tbptt", "check_train_pool", "pool_batch", "pool_indices",
           "reset_carry"]


def apply_model(model, variables, inputs, *, deterministic, rngs, mutable, **kwargs):
  """``(outputs, mutated)`` of ``model.apply`` whatever ``mutable`` is (``{}`` when False)."""
  out = model.apply(variables, inputs, deterministic=deterministic, rngs=rngs, mutable=mutable,
                    **kwargs)
  if mutable is False:
    return out, {}
  return out


def reset_carry(carry: Any, reset: Array) -> Any:
  """``carry`` with every leaf zeroed where ``reset`` (a bool scalar) holds: the first chunk
  of a truncated-BPTT stream starts from zero."""
  return jax.tree_util.tree_map(lambda c: jnp.where(reset, jnp.zeros_like(c), c), carry)


class Pipeline:
  """What the training loop needs from a data source (the pipeline protocol).

  Subclasses set ``name``, ``input_size``, ``output_size``, ``seq_len`` and implement
  ``describe``, ``baseline_loss``, ``model_head``, ``eval_batches``, ``loss``, ``metrics``
  (``train_loss`` when training minimises another weighting of ``loss``) and either
  ``train_batch`` (jit-able, ``host_fed = False``) or ``host_batch`` (``host_fed = True``).
  Batches must be a pure function of the step (and the seed) so that a resumed run
  continues exactly as an uninterrupted one.
  """

  host_fed: bool = False

  def model_head(self) -> ModelHead:
    """The output the task asks of the model (:func:`lvf_jax.train.build_model` builds it)."""
    raise NotImplementedError

  def build_model(self, config):
    """Deprecated: ``lvf_jax.train.build_model(config, pipeline.model_head())``."""
    warnings.warn("Pipeline.build_model is deprecated: use lvf_jax.train.build_model(config, "
                  "pipeline.model_head())", DeprecationWarning, stacklevel=2)
    return model_builder.build_model(config, self.model_head())

  def init_inputs(self) -> Array:
    """An input batch (batch 1) of the right shape and dtype for ``model.init``."""
    return jnp.zeros((1, self.seq_len, self.input_size), jnp.float32)

  def train_batch(self, data_key: Array, step: Array):
    raise NotImplementedError

  def host_batch(self, step: int, rows: Optional[slice] = None):
    """The training batch of optimiser step ``step`` (host arrays, batch axis first); with
    ``rows``, only those rows of it (this process's share under multi-process data
    parallelism, :func:`lvf_jax.train.parallel.process_rows`). Host-fed pipelines also
    have ``batch_size``, the rows of the whole batch."""
    raise NotImplementedError

  def initial_carry(self, eval: bool = False):  # noqa: A002 - mirrors the loop's wording
    """Recurrent state carried across batches (truncated BPTT); ``None`` if stateless."""
    del eval
    return None

  def carry_for_batch(self, carry, batch):
    """The carry to start ``batch`` from (e.g. reset at the start of an epoch)."""
    del batch
    return carry

  def forward(self, model, variables, batch, carry, *, deterministic, rngs, mutable):
    """``((outputs, new_carry), mutated_collections)`` of ``model`` on ``batch``."""
    del carry
    outputs, mutated = apply_model(model, variables, batch.inputs,
                                   deterministic=deterministic, rngs=rngs, mutable=mutable)
    return (outputs, None), mutated

  def train_loss(self, outputs: Array, batch) -> Array:
    """The loss a training step minimises (default: the evaluation's ``loss``)."""
    return self.loss(outputs, batch)

  def eval_metrics(self, outputs: Array, batch) -> dict[str, Array]:
    """Metrics of an evaluation batch (default: those of training, ``metrics``)."""
    return self.metrics(outputs, batch)

  def batch_weight(self, batch) -> Array:
    """Weight of an evaluation batch in the split's average (default: its size)."""
    return jnp.asarray(batch.inputs.shape[0], jnp.float32)

  def summarize(self, metrics: dict) -> dict:
    """Derived metrics from averaged ones (e.g. bits per character from the loss)."""
    return metrics


@dataclasses.dataclass(frozen=True)
class SyntheticPipeline(Pipeline):
  """Adapter between a synthetic task and the training loop.

  Training batches are a pure function of ``(seed, step)`` drawn inside the jitted step (so a
  resumed run sees exactly the batches of an uninterrupted one); evaluation uses the task's
  fixed splits.

  Attributes:
    train_pool: 0 (default): every step draws fresh sequences; ``N > 0``: a fixed training
      set of ``N`` sequences read in epochs (:func:`pool_batch`), as papers that train on a
      finite sample of a synthetic task do (e.g. the adding task of Mucllari et al. 2022,
      arXiv:2208.06496, Sec. 4.3: 100,000 sequences, 10 epochs).
  """

  task: Any
  batch_size: int
  eval_size: int
  eval_batch_size: int
  train_pool: int = 0

  @property
  def name(self) -> str:
    return self.task.name

  @property
  def input_size(self) -> int:
    return self.task.input_size

  @property
  def output_size(self) -> int:
    return self.task.output_size

  @property
  def seq_len(self) -> int:
    return self.task.seq_len

  def baseline_loss(self) -> float:
    return float(self.task.baseline_loss())

  def describe(self) -> str:
    pool = f", a fixed training set of {self.train_pool} sequences" if self.train_pool else ""
    return self.task.describe() + pool

  def train_batch(self, data_key: Array, step: Array):
    """The batch of optimiser step ``step`` (jit-able; pure in ``(data_key, step)``)."""
    if self.train_pool:
      return pool_batch(self.task, data_key, step, self.batch_size, self.train_pool)
    return self.task.sample(jax.random.fold_in(data_key, step), self.batch_size)

  def model_head(self) -> ModelHead:
    return ModelHead("per_step", self.output_size)

  def eval_batches(self, split: str) -> list:
    full = self.task.fixed_split(split, self.eval_size)
    size = min(self.eval_batch_size, self.eval_size)
    return [jax.tree_util.tree_map(lambda x, i=i: x[i:i + size], full)
            for i in range(0, self.eval_size, size)]

  def loss(self, outputs: Array, batch) -> Array:
    return self.task.loss(outputs, batch)

  def metrics(self, outputs: Array, batch) -> dict[str, Array]:
    return self.task.metrics(outputs, batch)


class ChunkBatch(NamedTuple):
  """One truncated-BPTT chunk of a synthetic batch: the task's fields sliced to the chunk's
  steps (fields without a time axis whole) and whether the chunk starts its sequences."""
  inputs: Array
  targets: Array
  mask: Array
  reset: Array  # bool scalar: the first chunk (the carry restarts from zero)


@dataclasses.dataclass(frozen=True)
class TruncatedSyntheticPipeline(SyntheticPipeline):
  """A synthetic task trained with truncated backpropagation through time.

  Each sequence of ``seq_len`` steps is cut into ``seq_len / tbptt`` chunks; optimiser step
  ``s`` trains chunk ``s mod C`` of the batch of sequences ``s // C`` (drawn from
  ``(seed, s // C)``, so a resumed run sees the batches of an uninterrupted one), starting
  from the final carry of the previous chunk (zero for the first; no gradient flows across
  chunks, Williams and Peng 1990). A chunk's loss is the task's loss on its steps (the mean
  over its steps for the every-step losses); a chunk whose steps have no weight in the
  task's loss (the adding task's before the last) contributes zero. Evaluation runs the whole
  sequences.

  Attributes:
    tbptt: steps per chunk (divides ``seq_len``).
    carries: zero carries of the stack for ``batch_size`` rows
      (:func:`lvf_jax.train.model_builder.initial_carries`).
  """

  tbptt: int = 0
  carries: Any = dataclasses.field(default=None, compare=False, hash=False)

  @property
  def chunks(self) -> int:
    return self.seq_len // self.tbptt

  def describe(self) -> str:
    return f"{super().describe()}, truncated BPTT {self.tbptt}"

  def train_batch(self, data_key: Array, step: Array):
    """Chunk ``step mod C`` of the batch of sequences ``step // C``."""
    step = jnp.asarray(step)
    full = super().train_batch(data_key, step // self.chunks)
    index = step % self.chunks

    def cut(x):
      if x.ndim >= 2 and x.shape[1] == self.seq_len:
        return jax.lax.dynamic_slice_in_dim(x, index * self.tbptt, self.tbptt, axis=1)
      return x

    return ChunkBatch(cut(full.inputs), cut(full.targets), cut(full.mask), index == 0)

  def initial_carry(self, eval: bool = False):  # noqa: A002 - mirrors the loop's wording
    return None if eval else self.carries

  def carry_for_batch(self, carry, batch):
    if carry is None or not isinstance(batch, ChunkBatch):
      return carry
    return reset_carry(carry, batch.reset)

  def forward(self, model, variables, batch, carry, *, deterministic, rngs, mutable):
    if not isinstance(batch, ChunkBatch):  # evaluation: whole sequences
      return super().forward(model, variables, batch, carry, deterministic=deterministic,
                             rngs=rngs, mutable=mutable)
    return apply_model(model, variables, batch.inputs, deterministic=deterministic,
                       rngs=rngs, mutable=mutable, initial_carries=carry, return_carries=True)

  def loss(self, outputs: Array, batch) -> Array:
    if not isinstance(batch, ChunkBatch):
      return super().loss(outputs, batch)
    value = self.task.loss_on_steps(outputs, tasks_lib.Batch(batch.inputs, batch.targets,
                                                             batch.mask))
    return jnp.where(jnp.sum(batch.mask) > 0, value, jnp.zeros_like(value))

  def metrics(self, outputs: Array, batch) -> dict[str, Array]:
    if not isinstance(batch, ChunkBatch):  # the tasks' metrics read whole sequences
      return super().metrics(outputs, batch)
    return {}


def _mix32(v: Array) -> Array:
  """A 32-bit integer hash (xor-shift and multiply; uint32 arithmetic wraps)."""
  v = v ^ (v >> 16)
  v = v * jnp.uint32(0x7FEB352D)
  v = v ^ (v >> 15)
  v = v * jnp.uint32(0x846CA68B)
  return v ^ (v >> 16)


def _shuffle_position(offset: Array, keys: tuple[Array, ...], pool: int) -> Array:
  """A bijection of ``[0, pool)`` chosen by ``keys``: a balanced Feistel network on the
  smallest even number of bits that holds ``pool``, applied again while the image lies
  outside ``[0, pool)`` (cycle walking, fewer than four passes on average)."""
  half = max(1, -(-int(pool - 1).bit_length() // 2))
  mask = jnp.uint32((1 << half) - 1)

  def feistel(x):
    left, right = x >> half, x & mask
    for k in keys:  # a fixed number of rounds, unrolled
      left, right = right, left ^ (_mix32(right ^ k) & mask)
    return (left << half) | right

  return jax.lax.while_loop(lambda x: x >= pool, feistel,
                            feistel(offset.astype(jnp.uint32))).astype(jnp.int32)


def pool_indices(key: Array, step: Array, batch_size: int, pool: int) -> Array:
  """Which of ``pool`` fixed examples make the batch of optimiser step ``step``.

  The pool is read in epochs of ``pool`` examples, epoch ``e`` in the random order that
  ``fold_in(key, e)`` picks (:func:`_shuffle_position`, computed for the batch's positions
  alone): every example once per epoch, a batch that crosses an epoch's end taking its first
  examples of the next. Requires ``batch_size <= pool < 2**31``.
  """
  position = jnp.asarray(step) * batch_size + jnp.arange(batch_size)

  def one(p):
    keys = jax.random.bits(jax.random.fold_in(key, p // pool), (4,), jnp.uint32)
    return _shuffle_position(p % pool, tuple(keys), pool)

  return jax.vmap(one)(position)


def pool_batch(task: Any, key: Array, step: Array, batch_size: int, pool: int):
  """The batch of step ``step`` from a fixed training set of ``pool`` sequences of ``task``:
  example ``i`` is ``task.sample(fold_in(k, i), 1)`` for one key ``k`` of the run, so the set
  is never stored and is the same at every epoch (:func:`pool_indices` orders it)."""
  order_key, example_key = jax.random.split(key)
  index = pool_indices(order_key, step, batch_size, pool)
  one = jax.vmap(lambda i: task.sample(jax.random.fold_in(example_key, i), 1))(index)
  return jax.tree_util.tree_map(lambda x: x[:, 0], one)


def check_tbptt(tbptt: Any, seq_len: int) -> int:
  """``config.train.tbptt`` as an int (0: off); raises ``ValueError`` unless it divides
  ``seq_len``."""
  if isinstance(tbptt, bool) or not isinstance(tbptt, int) or tbptt < 0:
    raise ValueError(f"config: 'train.tbptt' must be 0 (off) or a number of steps >= 1; "
                     f"got {tbptt!r}.")
  if tbptt and seq_len % tbptt:
    divisors = [d for d in range(1, seq_len + 1) if seq_len % d == 0]
    near = sorted(divisors, key=lambda d: abs(d - tbptt))[:4]
    raise ValueError(f"config: 'train.tbptt' ({tbptt}) must divide the task's sequence "
                     f"length {seq_len}; the nearest divisors are {sorted(near)}.")
  return tbptt


def check_train_pool(pool: Any, batch_size: int) -> int:
  """``config.train.train_pool`` as an int (0: fresh sequences every step); raises
  ``ValueError`` unless it is 0 or at least one batch."""
  if isinstance(pool, bool) or not isinstance(pool, int) or (pool and pool < batch_size) \
      or not 0 <= pool < 2**31:
    raise ValueError(f"config: 'train.train_pool' must be 0 (fresh sequences every step) or a "
                     f"number of sequences >= train.batch_size ({batch_size}) and < 2**31; "
                     f"got {pool!r}.")
  return pool
