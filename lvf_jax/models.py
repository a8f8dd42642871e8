"""Stacked recurrent networks, task heads, parameter counting and parameter budgets.

Heads (all built on :class:`StackedRecurrent`, any mix of cells):

* :class:`SequenceClassifier` -- last-state classifier ((p)sMNIST, CIFAR-10, adding with
  ``num_outputs=1``): logits from the last *valid* step of the top layer.
* :class:`SequencePredictor` -- per-step predictor: language model (``vocab_size`` set:
  integer tokens are embedded; outputs are next-token logits), polyphonic music (88
  logits, use a sigmoid / binary cross-entropy loss), regression (TIMIT, raw outputs),
  copy / denoise (per-step logits).

Regularisation terms of the cells are collected as described in
:mod:`lvf_jax.regularization`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from lvf_jax import _validation
from lvf_jax import cells as cells_lib
from lvf_jax import recurrences
from lvf_jax.layers import Recurrent

Array = jax.Array


class StackedRecurrent(nn.Module):
  """Several :class:`~lvf_jax.layers.Recurrent` layers with dropout between them.

  Attributes:
    cells: one cell per layer (bottom first); each runs in its own ``Recurrent`` layer
      ``layer_<i>`` (parameters under ``layer_<i>/cell``).
    dropout_rate: dropout on the inputs of layers ``1..L-1`` (between layers), active
      when ``deterministic=False`` (needs a ``'dropout'`` PRNG stream).
    unroll, checkpoint, fused, input_projection, segment_length: passed to every
      ``Recurrent`` (``fused``: the hand-written-VJP scan of :mod:`lvf_jax.recurrences`
      where one covers the cell; ``input_projection``: where that scan forms ``x_t W``;
      ``segment_length``: segment-wise rematerialisation; see ``Recurrent``).
  """

  cells: Sequence[nn.Module]
  dropout_rate: float = 0.0
  unroll: int = 1
  checkpoint: bool = False
  fused: bool = False
  input_projection: str = "auto"
  segment_length: Any = None

  @nn.compact
  def __call__(self, x: Array, *, seq_lengths: Optional[Array] = None,
               initial_carries: Optional[Sequence[Any]] = None, deterministic: bool = True,
               return_carries: bool = False, top_sequences: bool = True):
    """Returns the top layer's outputs ``(batch, time, n_L)`` (and the list of carries).

    ``top_sequences=False``: the top layer forms no outputs (``Recurrent(return_sequences=
    False)``) and ``None`` stands in their place; read its final carry instead
    (:func:`carry_output`)."""
    _validation.check_rate("StackedRecurrent", "dropout_rate", self.dropout_rate)
    if initial_carries is not None and len(initial_carries) != len(self.cells):
      raise ValueError(
          f"StackedRecurrent: argument 'initial_carries' must have one entry per layer "
          f"({len(self.cells)}); got {len(initial_carries)}.")
    carries = []
    for i, cell in enumerate(self.cells):
      if i > 0 and self.dropout_rate > 0:
        x = nn.Dropout(self.dropout_rate)(x, deterministic=deterministic)
      layer = Recurrent(cell.clone(parent=None, name=None), return_carry=True,
                        unroll=self.unroll, checkpoint=self.checkpoint, fused=self.fused,
                        input_projection=self.input_projection,
                        segment_length=self.segment_length, name=f"layer_{i}")
      carry, x = layer(x, seq_lengths=seq_lengths,
                       initial_carry=None if initial_carries is None else initial_carries[i],
                       return_sequences=top_sequences or i < len(self.cells) - 1)
      carries.append(carry)
    return (x, carries) if return_carries else x


def carry_output(carry: Any) -> Array:
  """A layer's output at its last processed step from its final carry: the carry itself,
  or its last entry for a tuple carry (``(c, h)`` of the LSTM), the convention of every
  cell of :mod:`lvf_jax.cells` and of Flax's cells. With padding (``seq_lengths``) the final
  carry is the carry of the last valid step, so this is :func:`last_valid` of the outputs
  without forming them."""
  return carry[-1] if isinstance(carry, (tuple, list)) else carry


def last_valid(y: Array, seq_lengths: Optional[Array]) -> Array:
  """``y[b, seq_lengths[b] - 1]`` of batch-major ``(batch, time, k)`` outputs (last step if
  None)."""
  if seq_lengths is None:
    return y[:, -1]
  idx = jnp.asarray(seq_lengths).astype(jnp.int32) - 1
  return jnp.take_along_axis(y, idx[:, None, None], axis=1)[:, 0]


class _Embedded(nn.Module):
  """Optional token embedding in front of a stack (shared by the heads)."""

  vocab_size: Optional[int] = None
  embed_dim: Optional[int] = None

  @nn.compact
  def __call__(self, x: Array) -> Array:
    if self.vocab_size is None:
      return x
    if not jnp.issubdtype(jnp.asarray(x).dtype, jnp.integer):
      raise ValueError(
          f"SequenceModel: with vocab_size={self.vocab_size} the inputs must be integer "
          f"tokens (batch, time); got dtype {jnp.asarray(x).dtype}.")
    embed = nn.Embed(self.vocab_size, self.embed_dim or self.vocab_size, name="embed")
    sharding = recurrences.typed_sharding(x)
    if sharding is not None:  # a batch split over a mesh with Explicit axes
      spec = jax.sharding.PartitionSpec(*sharding.spec, None)
      return embed.embedding.at[x].get(
          out_sharding=jax.sharding.NamedSharding(sharding.mesh, spec))
    return embed(x)


class _SequenceModel(nn.Module):
  """Shared fields and body of the heads: optional embedding -> input dropout -> stack ->
  output dropout -> ``Dense(num_outputs)`` named ``embedding``, ``rnn`` and ``head``."""

  cells: Sequence[nn.Module]
  num_outputs: int
  dropout_rate: float = 0.0
  input_dropout_rate: float = 0.0
  output_dropout_rate: Optional[float] = None
  vocab_size: Optional[int] = None
  embed_dim: Optional[int] = None
  unroll: int = 1
  checkpoint: bool = False
  fused: bool = False
  input_projection: str = "auto"
  segment_length: Any = None

  def _stack(self, x: Array, seq_lengths, initial_carries, deterministic: bool,
             top_sequences: bool = True):
    """``(outputs, final carries)`` of the embedded stack (called from ``__call__``)."""
    x = _Embedded(self.vocab_size, self.embed_dim, name="embedding")(x)
    _validation.check_rate(type(self).__name__, "input_dropout_rate", self.input_dropout_rate)
    if self.input_dropout_rate > 0:
      x = nn.Dropout(self.input_dropout_rate)(x, deterministic=deterministic)
    return StackedRecurrent(self.cells, self.dropout_rate, self.unroll, self.checkpoint,
                            self.fused, self.input_projection, self.segment_length,
                            name="rnn")(
                                x, seq_lengths=seq_lengths, initial_carries=initial_carries,
                                deterministic=deterministic, return_carries=True,
                                top_sequences=top_sequences)

  def _head(self, h: Array, deterministic: bool) -> Array:
    rate = self.dropout_rate if self.output_dropout_rate is None else self.output_dropout_rate
    _validation.check_rate(type(self).__name__, "output_dropout_rate", rate)
    if rate > 0:
      h = nn.Dropout(rate)(h, deterministic=deterministic)
    return nn.Dense(self.num_outputs, dtype=h.dtype, name="head")(h)


class SequenceClassifier(_SequenceModel):
  """Last-state classifier: ``Dense(num_outputs)`` of the top layer at the last valid step.

  Attributes:
    cells: one cell per layer.
    num_outputs: number of classes (logits) or regression outputs.
    dropout_rate: dropout between layers, and before the head unless
      ``output_dropout_rate`` is set.
    input_dropout_rate: dropout on the stack's input (the embedded tokens where there is
      an embedding): AWD-LSTM's input dropout (Merity et al. 2018, arXiv:1708.02182), which
      the NC-GRU paper's word-level PTB model uses (Mucllari et al. 2022, Sec. 4.5).
    output_dropout_rate: dropout before the head; None: ``dropout_rate``.
    vocab_size, embed_dim: optional token embedding of integer inputs.
    unroll, checkpoint, fused, input_projection, segment_length: passed to every
      :class:`~lvf_jax.layers.Recurrent`.

  The top layer forms no per-step outputs: the head reads its final carry
  (:func:`carry_output`, equal to the output at the last valid step), so with
  ``segment_length`` the memory of a training step does not grow as ``T B n``.
  """

  @nn.compact
  def __call__(self, x: Array, *, seq_lengths: Optional[Array] = None,
               deterministic: bool = True) -> Array:
    _, carries = self._stack(x, seq_lengths, None, deterministic, top_sequences=False)
    return self._head(carry_output(carries[-1]), deterministic)


class SequencePredictor(_SequenceModel):
  """Per-step predictor: ``Dense(num_outputs)`` of the top layer at every step.

  Language model: set ``vocab_size`` (integer inputs are embedded) and
  ``num_outputs = vocab_size``; music: ``num_outputs = 88`` logits for a sigmoid
  (multi-label) loss; regression: raw outputs. For truncated BPTT pass the previous
  chunk's carries as ``initial_carries`` and use ``return_carries=True``.

  Attributes:
    cells, num_outputs, dropout_rate, input_dropout_rate, output_dropout_rate, vocab_size,
      embed_dim, unroll, checkpoint, fused, input_projection, segment_length: as
      :class:`SequenceClassifier`.
  """

  @nn.compact
  def __call__(self, x: Array, *, seq_lengths: Optional[Array] = None,
               initial_carries: Optional[Sequence[Any]] = None, deterministic: bool = True,
               return_carries: bool = False):
    y, carries = self._stack(x, seq_lengths, initial_carries, deterministic)
    out = self._head(y, deterministic)
    return (out, carries) if return_carries else out


# ------------------------------------------------------------------ parameter counts

_MANIFOLD_PREFIXES = ("skew", "orthogonal")
_TRIANGLE_NAMES = ("vector_field", "triangular")


def _effective_size(name: str, shape: tuple[int, ...]) -> int:
  size = int(np.prod(shape)) if shape else 1
  if name.startswith("unitary") and len(shape) == 3 and shape[0] == 2 and shape[1] == shape[2]:
    return shape[1] * shape[1]  # [Re W, Im W] of a unitary W: dim U(n) = n^2
  if name == "vector_field_divergence":
    return 0  # replaces the divergence of ``vector_field``: the pair spans dim VF_n
  square = len(shape) == 2 and shape[0] == shape[1]
  if square and (name.startswith(_MANIFOLD_PREFIXES) or name in _TRIANGLE_NAMES):
    n = shape[0]
    return n * (n - 1) // 2
  return size


def count_params(params: Any, effective: bool = False) -> int:
  """Number of trainable parameters (the ``'params'`` collection).

  Args:
    params: a parameter pytree, or a variables dict holding ``'params'`` (other
      collections such as ``'dtriv'`` or ``'losses'`` are not trainable and not counted).
      Shape-only leaves (``jax.ShapeDtypeStruct``) are fine.
    effective: count degrees of freedom as the papers do: an ``n x n`` parameter named
      ``skew*`` / ``orthogonal*`` (a point of Skew(n) / SO(n)), ``vector_field`` (lvfRNN:
      ``D_V`` depends on ``V^T - V`` only; with its divergence stored apart,
      ``vector_field_divergence``, the pair still spans ``dim VF_n``, so that counts 0) or
      ``triangular`` (nnRNN's strictly-lower ``T``)
      counts ``n (n - 1) / 2``; a ``(2, n, n)`` pair ``unitary*`` (the full-capacity
      uRNN's ``[Re W, Im W]``, a point of U(n)) counts ``n^2``.
  """
  if hasattr(params, "get") and "params" in params:
    params = params["params"]
  total = 0
  for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
    shape = tuple(np.shape(leaf))
    name = str(getattr(path[-1], "key", "")) if path else ""
    total += _effective_size(name, shape) if effective else int(np.prod(shape))
  return total


ModelFn = Callable[[int], nn.Module]  #: builds a model of a given hidden size


def default_model_fn(name: str, output_size: int, *, num_layers: int = 1,
                     head: str = "predictor", vocab_size: Optional[int] = None,
                     embed_dim: Optional[int] = None,
                     cell_kwargs: Optional[dict] = None) -> ModelFn:
  """``hidden -> model`` with ``num_layers`` cells ``name`` and a predictor/classifier head."""
  if head not in ("predictor", "classifier"):
    raise ValueError(
        f"default_model_fn: argument 'head' must be 'predictor' or 'classifier'; got {head!r}.")
  kw = dict(cell_kwargs or {})
  cls = SequencePredictor if head == "predictor" else SequenceClassifier

  def fn(hidden: int) -> nn.Module:
    cells = [cells_lib.make_cell(name, hidden, **kw) for _ in range(num_layers)]
    return cls(cells, output_size, vocab_size=vocab_size, embed_dim=embed_dim)

  return fn


def params_for_hidden(model_fn: ModelFn, hidden: int, input_size: int, *,
                      vocab_size: Optional[int] = None, effective: bool = True) -> int:
  """Parameter count of ``model_fn(hidden)`` (shape-only ``jax.eval_shape`` of ``init``)."""
  model = model_fn(hidden)
  if vocab_size is None:
    x = jax.ShapeDtypeStruct((1, 2, input_size), jnp.float32)
  else:
    x = jax.ShapeDtypeStruct((1, 2), jnp.int32)
  variables = jax.eval_shape(lambda k, x: model.init(k, x), jax.random.key(0), x)
  return count_params(variables, effective=effective)


def hidden_for_budget(model_fn_or_name: Union[str, ModelFn], budget: int, input_size: int,
                      output_size: Optional[int] = None, *, num_layers: int = 1,
                      head: str = "predictor", vocab_size: Optional[int] = None,
                      embed_dim: Optional[int] = None, cell_kwargs: Optional[dict] = None,
                      effective: bool = True, multiple_of: Optional[int] = None,
                      max_hidden: int = 1 << 16) -> int:
  """Largest hidden size whose model has at most ``budget`` trainable parameters.

  Args:
    model_fn_or_name: ``hidden -> flax Module`` (called with a batch-major input
      ``(batch, time, input_size)``, or integer tokens when ``vocab_size`` is set), or a
      cell name of :data:`lvf_jax.cells.CELLS` (then ``output_size`` is required and the
      model is :func:`default_model_fn`).
    budget: the parameter budget.
    input_size: input features (ignored with ``vocab_size``).
    output_size: head outputs (for a cell name).
    num_layers, head, vocab_size, embed_dim, cell_kwargs: for a cell name.
    effective: count as :func:`count_params` with ``effective`` (the papers' convention).
    multiple_of: only hidden sizes divisible by this (default: the cell's
      ``hidden_multiple``, e.g. 2 for ``'nnrnn'``; 1 for a model function).
    max_hidden: search limit.

  Returns:
    the hidden size (the count is non-decreasing in it, so this is the size whose count
    is closest to the budget without exceeding it).
  """
  if isinstance(model_fn_or_name, str):
    name = model_fn_or_name
    if output_size is None:
      raise ValueError("hidden_for_budget: argument 'output_size' is required with a cell name.")
    model_fn = default_model_fn(name, output_size, num_layers=num_layers, head=head,
                                vocab_size=vocab_size, embed_dim=embed_dim,
                                cell_kwargs=cell_kwargs)
    if multiple_of is None:
      multiple_of = cells_lib.CELLS[name].hidden_multiple
  else:
    model_fn = model_fn_or_name
  step = multiple_of or 1
  lo = 2 if step == 1 else step  # n >= 2 (lvfRNN); multiples of `step`
  if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget <= 0:
    raise ValueError(
        f"hidden_for_budget: argument 'budget' must be a positive int; got {budget!r}.")

  def count(k: int) -> int:  # k indexes hidden = k * step
    return params_for_hidden(model_fn, k * step, input_size, vocab_size=vocab_size,
                             effective=effective)

  k_lo = max(1, math.ceil(lo / step))
  c_lo = count(k_lo)
  if c_lo > budget:
    raise ValueError(
        f"hidden_for_budget: budget {budget} is below the smallest model "
        f"({c_lo} parameters at hidden={k_lo * step}).")
  k_hi = k_lo
  while count(k_hi * 2) <= budget:  # exponential search for an upper bracket
    k_hi *= 2
    if k_hi * step > max_hidden:
      raise ValueError(f"hidden_for_budget: no hidden size <= max_hidden={max_hidden} "
                       f"exhausts the budget {budget}.")
  lo_k, hi_k = k_hi, k_hi * 2  # count(lo_k) <= budget < count(hi_k)
  while hi_k - lo_k > 1:
    mid = (lo_k + hi_k) // 2
    if count(mid) <= budget:
      lo_k = mid
    else:
      hi_k = mid
  return lo_k * step


__all__ = [
    "ModelFn", "SequenceClassifier", "SequencePredictor", "StackedRecurrent", "carry_output",
    "count_params", "default_model_fn", "hidden_for_budget", "last_valid", "params_for_hidden",
]
