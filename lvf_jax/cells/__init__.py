"""Flax cells of lvf_jax (structured: ``prepare`` / ``project_inputs`` / ``step``).

Row-vector convention: every cell computes ``h_t = f(h_{t-1} @ K + x_t @ U ...)`` with the
recurrent kernel ``K = M^T`` for the paper's column-form matrix ``M``.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any

from lvf_jax.cells.antisymmetric import AntisymmetricRNNCell, GatedAntisymmetricRNNCell
from lvf_jax.cells.base import (ACTIVATIONS, InputProjection, KernelCell, PreparedCell,
                                StructuredCell, compute_dtype)
from lvf_jax.cells.baselines import GRUCell, LSTMCell, OrthInitRNNCell, TanhRNNCell
from lvf_jax.cells.lvf import LVFRNNCell
from lvf_jax.cells.ncgru import NCGRUCell
from lvf_jax.cells.nnrnn import NNRNNCell
from lvf_jax.cells.orthogonal import ExpRNNCell, ScoRNNCell
from lvf_jax.cells.soft import KRUCell, SoftOrthogonalRNNCell
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
    "softorth": SoftOrthogonalRNNCell,
    "kru": KRUCell,
}


#: Types a config file or the command line can give a cell option.
OPTION_TYPES = (bool, int, float, str)
#: Fields of every cell that are not options (the hidden size, Flax's bookkeeping, dtypes).
_NOT_OPTIONS = ("features", "parent", "name", "dtype", "param_dtype")


def _check_name(fn: str, name: str) -> None:
  if name not in CELLS:
    raise ValueError(f"{fn}: argument 'name' must be one of {sorted(CELLS)}; got {name!r}.")


@functools.cache
def cell_options(name: str) -> dict[str, tuple[type, Any]]:
  """The options of the cell registered as ``name`` that a config can set.

  Every field of the cell's dataclass whose type is a bool, int, float or str (or an
  ``Optional`` of one; a field that takes a str or a callable counts as a str when its
  default is a str), with its default: ``{'tau': (float, 1.0), 'rho': (int, None), ...}``.
  Initialisers and other callables are left to Python code.
  """
  _check_name("cell_options", name)
  cls = CELLS[name]
  hints = typing.get_type_hints(cls)
  out = {}
  for field in dataclasses.fields(cls):
    if field.name in _NOT_OPTIONS or field.default is dataclasses.MISSING:
      continue
    kinds = [t for t in (typing.get_args(hints[field.name]) or (hints[field.name],))
             if t in OPTION_TYPES]
    default = field.default
    if default is None and len(kinds) == 1:
      out[field.name] = (kinds[0], None)
    elif default is not None and type(default) in kinds:
      out[field.name] = (type(default), default)
  return out


def cell_fields(name: str) -> tuple[str, ...]:
  """Every keyword argument the cell registered as ``name`` takes (options and callables)."""
  _check_name("cell_fields", name)
  return tuple(f.name for f in dataclasses.fields(CELLS[name])
               if f.name not in ("features", "parent", "name"))


def make_cell(name: str, features: int, **kwargs: Any):
  """Builds the cell registered as ``name`` (see ``CELLS``) with ``features`` hidden units.

  Raises:
    ValueError: for an unknown ``name`` or a keyword argument the cell does not take (the
      message lists the ones it takes).
  """
  _check_name("make_cell", name)
  unknown = sorted(set(kwargs) - set(cell_fields(name)))
  if unknown:
    raise ValueError(
        f"make_cell: cell {name!r} takes no option(s) {unknown}; its options are "
        f"{sorted(cell_options(name))}.")
  return CELLS[name](features, **kwargs)


__all__ = [
    "ACTIVATIONS", "AntisymmetricRNNCell", "CELLS", "EUNNParams", "EURNNCell", "ExpRNNCell",
    "FullCapacityURNNCell", "GORUCell", "GRUCell", "GatedAntisymmetricRNNCell",
    "InputProjection", "KRUCell", "KernelCell", "LSTMCell", "LVFRNNCell", "NCGRUCell",
    "NNRNNCell", "OrthInitRNNCell", "PreparedCell", "ScoRNNCell", "SoftOrthogonalRNNCell",
    "StructuredCell", "TanhRNNCell", "URNNCell",
    "OPTION_TYPES", "cell_fields", "cell_options", "compute_dtype", "make_cell",
]
