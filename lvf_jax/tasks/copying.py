"""Copy task (Hochreiter & Schmidhuber 1997; Arjovsky et al. 2016; lvfRNN paper App. E;
nnRNN paper SM A.1; NC-GRU paper Sec. 4.4).

Encoding (token ids, ``K`` = number of symbols to copy, ``S = num_symbols``):

* ``0`` blank, ``1..S`` data symbols (``S = 8``: the alphabet ``1..8``), ``S + 1`` marker
  (``9`` for ``S = 8``). Inputs are one-hot over these ``S + 2`` tokens (``input_size = 10``).
* Outputs are classes ``0..S`` (blank or a data symbol; ``output_size = 9``): the marker is
  never a target.
* Sequence length ``T + 2K``. Input: the ``K`` symbols (drawn uniformly from ``1..S``), blanks,
  the marker, blanks. Target: blank for the first ``T + K`` steps, then the ``K`` symbols in
  order. Loss: softmax cross-entropy averaged over *all* ``T + 2K`` steps (as every reference);
  accuracy over the last ``K`` outputs.
* Marker position. Default (``faithful=False``, Arjovsky et al. 2016): ``T - 1`` blanks, the
  marker at 0-based index ``T + K - 1``, then ``K`` blanks, so the outputs start at the step
  right after the marker. ``faithful=True`` reproduces the expRNN / nnRNN reference code:
  ``T`` blanks, the marker at index ``T + K`` (the step of the first output), then ``K - 1``
  blanks. The targets, the length and the baseline are the same in both layouts.

Example (``T = 3, K = 2``, symbols ``5 7``), default layout::

  inputs   5 7 0 0 9 0 0
  targets  0 0 0 0 0 5 7

No-memory baseline: a predictor that only knows the time step outputs blank (loss 0) for the
first ``T + K`` steps and the uniform distribution over ``1..S`` for the last ``K`` steps
(loss ``ln S`` each; nothing better is possible since the symbols are i.i.d. uniform and
unseen), hence ``K ln S / (T + 2K)`` (= 0.0945 for ``T = 200, K = 10, S = 8``; lvfRNN paper
App. E, nnRNN paper SM A.1, NC-GRU paper Sec. 4.4).
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
class CopyTask(base.RecallLossMixin, base.SyntheticTask):
  """Copy task with delay ``T`` and ``K`` symbols from ``1..num_symbols`` (see module doc).

  Attributes:
    T: delay (any integer >= 1; papers: :attr:`PAPER_LENGTHS` = 200 (lvfRNN, nnRNN),
      1000 and 2000 (expRNN, NC-GRU)).
    K: number of symbols to memorise (10 in every paper).
    num_symbols: alphabet size ``S`` of the data symbols ``1..S`` (8 in every paper).
    faithful: marker position of the expRNN/nnRNN code instead of Arjovsky et al. (2016).
  """

  T: int = 200
  K: int = 10
  num_symbols: int = 8
  faithful: bool = False

  name: ClassVar[str] = "copy"
  PAPER_LENGTHS: ClassVar[tuple[int, ...]] = (200, 1000, 2000)

  def __post_init__(self):
    _validation.check_int("CopyTask", "T", self.T, 1)
    _validation.check_int("CopyTask", "K", self.K, 1)
    _validation.check_int("CopyTask", "num_symbols", self.num_symbols, 1)
    if not isinstance(self.faithful, bool):
      raise ValueError(f"CopyTask: argument 'faithful' must be a bool; got {self.faithful!r}.")

  @property
  def marker(self) -> int:
    """Token id of the marker (``num_symbols + 1``)."""
    return self.num_symbols + 1

  @property
  def marker_index(self) -> int:
    """0-based time index of the marker."""
    return self.T + self.K - (0 if self.faithful else 1)

  def encode(self, symbols: Array) -> base.Batch:
    """Builds the batch for given symbols.

    Args:
      symbols: integer array ``(batch, K)`` with entries in ``1..num_symbols``.

    Returns:
      :class:`~lvf_jax.tasks.base.Batch` with ``inputs (batch, T + 2K, num_symbols + 2)``
      one-hot ``float32``, ``targets (batch, T + 2K)`` ``int32``, ``mask`` all ones.
    """
    symbols = self._check_k_columns("CopyTask.encode", "symbols", symbols)
    b = symbols.shape[0]
    n_before = self.marker_index - self.K
    n_after = self.seq_len - self.marker_index - 1
    tokens = jnp.concatenate([
        symbols,
        jnp.zeros((b, n_before), jnp.int32),
        jnp.full((b, 1), self.marker, jnp.int32),
        jnp.zeros((b, n_after), jnp.int32)], axis=1)
    return self._recall_batch(tokens, symbols)

  def _sample(self, key: Array, batch_size: int) -> base.Batch:
    """Draws ``batch_size`` sequences (symbols i.i.d. uniform on ``1..num_symbols``)."""
    u = jax.random.uniform(key, (batch_size, self.K), jnp.float32)
    return self.encode(base.uniform_ints(u, 1, self.num_symbols + 1))

