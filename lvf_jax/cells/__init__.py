"""Flax cells of lvf_jax (structured: ``prepare`` / ``project_inputs`` / ``step``).

Row-vector convention: every cell computes ``h_t = f(h_{t-1} @ K + x_t @ U ...)`` with the
recurrent kernel ``K = M^T`` for the paper's column-form matrix ``M``.
"""

from __future__ import annotations

from typing import Any

from lvf_jax.cells.antisymmetric import AntisymmetricRNNCell, GatedAntisymmetricRNNCell
from lvf_jax.cells.base import (ACTIVATIONS, InputProjection, KernelCell, StructuredCell,
                                compute_dtype)
from lvf_jax.cells.baselines import GRUCell, LSTMCell, OrthInitRNNCell, TanhRNNCell
from lvf_jax.cells.lvf import LVFRNNCell
from lvf_jax.cells.ncgru import NCGRUCell
from lvf_jax.cells.nnrnn import NNRNNCell
from lvf_jax.cells.orthogonal import ExpRNNCell, ScoRNNCell
from lvf_jax.cells.unitary import (EUNNParams, EURNNCell, FullCapacityURNNCell, GORUCell,
                                   URNNCell)

CELLS = {
    "lvf": LVFRNNCell,
    "exprnn": ExpRNNCell,
    "scornn": ScoRNNCell,
    "ncgru": NCGRUCell,
    "antisymmetric": AntisymmetricRNNCell,
    "gated_antisymmetric": GatedAntisymmetricRNNCell,
    "nnrnn": NNRNNCell,
    "rnn": TanhRNNCell,
    "rnn_orth": OrthInitRNNCell,
    "lstm": LSTMCell,
    "gru": GRUCell,
    "urnn": URNNCell,
    "fcurnn": FullCapacityURNNCell,
    "eurnn": EURNNCell,
    "goru": GORUCell,
}


def make_cell(name: str, features: int, **kwargs: Any):
  """Builds the cell registered as ``name`` (see ``CELLS``) with ``features`` hidden units."""
  if name not in CELLS:
    raise ValueError(f"make_cell: argument 'name' must be one of {sorted(CELLS)}; got {name!r}.")
  return CELLS[name](features, **kwargs)


__all__ = [
    "ACTIVATIONS", "AntisymmetricRNNCell", "CELLS", "EUNNParams", "EURNNCell", "ExpRNNCell",
    "FullCapacityURNNCell", "GORUCell", "GRUCell", "GatedAntisymmetricRNNCell",
    "InputProjection", "KernelCell", "LSTMCell", "LVFRNNCell", "NCGRUCell", "NNRNNCell",
    "OrthInitRNNCell", "ScoRNNCell", "StructuredCell", "TanhRNNCell", "URNNCell",
    "compute_dtype", "make_cell",
]
