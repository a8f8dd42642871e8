"""Denoise task (Jing et al. 2019, GORU; NC-GRU paper Sec. 4.2).

The input contains ``K = 10`` data points at random positions among noise; after a marker the
network must output the data points in the order they appeared, ignoring the noise.

Encoding (``S = num_symbols = 9``; token ids):

* inputs, one-hot over ``S + 2 = 11`` tokens (``input_size = 11``): ``0`` noise, ``1..S`` data
  symbols, ``S + 1 = 10`` marker. This is the paper's dictionary ``{a_i}_{i=0}^{n+1}`` of
  ``n`` data points plus "noise" and "marker". Every step that is neither a data point nor the
  marker -- including the ``K`` steps after the marker -- carries the noise token.
* outputs, classes ``0..S`` (``output_size = 10``): ``0`` means "no output" (blank), ``1..S``
  the data symbols.
* sequence length ``T + 2K`` (= ``T + 20``, as the reference code): the ``K`` symbols, i.i.d.
  uniform on ``1..S``, are placed at ``K`` *distinct* positions drawn uniformly without
  replacement from the first ``T`` steps; steps ``T .. T + K - 2`` are noise; the marker is at
  0-based index ``T + K - 1``; the last ``K`` steps are noise. Targets: blank for the first
  ``T + K`` steps, then the ``K`` symbols in order of position, i.e. the outputs start at the
  step right after the marker (like the copy task's default layout).
* loss: softmax cross-entropy averaged over all ``T + 2K`` steps (as the reference, whose
  losses in NC-GRU Table 2 are on this scale); accuracy over the last ``K`` outputs.

Fixes with respect to the reference generator of Jing et al. 2019: it draws the ``K``
positions *with* replacement from the first ``T + K - 1`` steps, so colliding symbols overwrite
each other while still being expected as targets, and it one-hot encodes the marker (id 10)
with depth 10, i.e. as an all-zero vector indistinguishable from "no input". Here positions are
distinct and the marker is its own one-hot unit.

Example (``T = 4, K = 2, S = 9``; symbols ``3 8`` at positions ``2, 0``)::

  inputs   8 0 3 0 0 10 0 0      (0 = noise, 10 = marker)
  targets  0 0 0 0 0 0  8 3

No-memory baseline: a predictor that only knows the time step outputs blank with certainty
for the first ``T + K`` steps (loss 0) and, at each of the last ``K`` steps, the marginal
distribution of the symbol there, which is uniform on ``1..S`` (the symbols are i.i.d. uniform
and independent of the positions), with expected loss its entropy ``ln S``. Cross-entropy is
minimised in expectation by the true marginal, so the baseline is
``K ln S / (T + 2K)`` (= ``10 ln 9 / (T + 20)``, the value printed by the reference code).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

from lvf_jax import _validation
from lvf_jax.tasks import base

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class DenoiseTask(base.RecallLossMixin, base.SyntheticTask):
  """Denoise task (see module docstring).

  Attributes:
    T: length of the region holding the data points (any integer >= K; papers:
      :attr:`PAPER_LENGTHS` = 200, 400, NC-GRU paper Table 2).
    K: number of data points (10 in the papers).
    num_symbols: number of distinct data symbols ``S`` (9 in the papers).
  """

  T: int = 200
  K: int = 10
  num_symbols: int = 9

  name: ClassVar[str] = "denoise"
  PAPER_LENGTHS: ClassVar[tuple[int, ...]] = (200, 400)

  def __post_init__(self):
    _validation.check_int("DenoiseTask", "K", self.K, 1)
    _validation.check_int("DenoiseTask", "T", self.T, max(int(self.K), 1))
    _validation.check_int("DenoiseTask", "num_symbols", self.num_symbols, 1)

  @property
  def noise(self) -> int:
    """Token id of the noise symbol (0)."""
    return 0

  @property
  def marker(self) -> int:
    """Token id of the marker (``num_symbols + 1``)."""
    return self.num_symbols + 1

  @property
  def marker_index(self) -> int:
    """0-based time index of the marker (``T + K - 1``)."""
    return self.T + self.K - 1

  def encode(self, symbols: Array, positions: Array) -> base.Batch:
    """Builds the batch for given symbols and (distinct) positions.

    Args:
      symbols: integer array ``(batch, K)`` with entries in ``1..num_symbols``; ``symbols[:, j]``
        is placed at ``positions[:, j]``.
      positions: integer array ``(batch, K)`` of *distinct* positions in ``[0, T)`` per row (in
        any order; distinctness is the caller's responsibility and is not checked).

    Returns:
      :class:`~lvf_jax.tasks.base.Batch`: ``inputs (batch, T + 2K, num_symbols + 2)`` one-hot
      ``float32``; ``targets (batch, T + 2K)`` ``int32`` (the symbols sorted by position in the
      last ``K`` steps); ``mask`` all ones.
    """
    symbols = self._check_k_columns("DenoiseTask.encode", "symbols", symbols)
    positions = self._check_k_columns("DenoiseTask.encode", "positions", positions)
    if symbols.shape != positions.shape:
      raise ValueError(
          f"DenoiseTask.encode: arguments 'symbols' and 'positions' must have the same shape; "
          f"got {symbols.shape} and {positions.shape}.")
    b = symbols.shape[0]
    order = jnp.argsort(positions, axis=1)
    in_order = jnp.take_along_axis(symbols, order, axis=1)
    rows = jnp.broadcast_to(jnp.arange(b, dtype=jnp.int32)[:, None], (b, self.K))
    tokens = jnp.full((b, self.seq_len), self.noise, jnp.int32)
    tokens = tokens.at[rows, positions].set(symbols)
    tokens = tokens.at[:, self.marker_index].set(self.marker)
    return self._recall_batch(tokens, in_order)

  def _sample(self, key: Array, batch_size: int) -> base.Batch:
    """Draws ``batch_size`` sequences (positions without replacement, uniform subsets)."""
    u = jax.random.uniform(key, (batch_size, self.K + self.T), jnp.float32)
    symbols = base.uniform_ints(u[:, :self.K], 1, self.num_symbols + 1)
    # The indices of the K largest of T i.i.d. uniforms form a uniformly random K-subset
    # (ties, of probability ~T^2 2^-24, still give distinct indices).
    positions = jax.lax.top_k(u[:, self.K:], self.K)[1].astype(jnp.int32)
    return self.encode(symbols, positions)

