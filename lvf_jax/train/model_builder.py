"""The model builder: the cells and the model of ``config.model`` for the head a task asks for.

A task pipeline describes the output it needs as a :class:`ModelHead` (one prediction per
step, or one from the last valid step; token inputs with their vocabulary); :func:`build_model`
puts the configured stack of cells under that head. Nothing here reads data.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import flax.linen as nn
import jax

from lvf_jax import cells as cells_lib
from lvf_jax import models
from lvf_jax import recurrences

__all__ = ["HEAD_KINDS", "ModelHead", "build_cells", "build_model", "initial_carries",
           "last_state_model", "per_step_model", "segment_length_option"]

#: ``per_step``: :class:`lvf_jax.models.SequencePredictor`; ``last_state``:
#: :class:`lvf_jax.models.SequenceClassifier`.
HEAD_KINDS = ("per_step", "last_state")


class ModelHead(NamedTuple):
  """The output a task asks of the model.

  Attributes:
    kind: one of :data:`HEAD_KINDS`.
    num_outputs: outputs per prediction (logits, or regression targets).
    vocab_size: token inputs embedded from this vocabulary (None: real-valued inputs).
    embed_dim: the embedding's width (None: the model's default).
  """
  kind: str
  num_outputs: int
  vocab_size: Optional[int] = None
  embed_dim: Optional[int] = None


def build_model(config, head: Any) -> nn.Module:
  """The model of ``config.model`` under ``head``.

  Args:
    config: the training config (its ``model`` section is read).
    head: a :class:`ModelHead`, or a pipeline (its ``model_head()``).

  Returns:
    a :class:`lvf_jax.models.SequencePredictor` (``per_step``) or
    :class:`lvf_jax.models.SequenceClassifier` (``last_state``) over :func:`build_cells`.
  """
  if not isinstance(head, ModelHead):
    head = head.model_head()
  if head.kind not in HEAD_KINDS:
    raise ValueError(f"build_model: argument 'head.kind' must be one of {list(HEAD_KINDS)}; "
                     f"got {head.kind!r}.")
  tokens = {} if head.vocab_size is None else dict(vocab_size=head.vocab_size,
                                                    embed_dim=head.embed_dim)
  make = per_step_model if head.kind == "per_step" else last_state_model
  return make(config, head.num_outputs, **tokens)


def initial_carries(config, batch_size: int) -> list:
  """Zero carries of every layer of ``config.model`` for ``batch_size`` rows (a list)."""
  return [cell.initialize_carry(jax.random.key(0), (batch_size, 1))
          for cell in build_cells(config)]


def build_cells(config) -> list:
  """One cell per layer from ``config.model`` (name, hidden, cell kwargs)."""
  m = config.model
  kwargs = dict(m.get("cell", {}) or {})
  hidden = m.hidden
  sizes = list(hidden) if isinstance(hidden, (list, tuple)) else [hidden] * m.num_layers
  if len(sizes) != m.num_layers:
    raise ValueError(
        f"config: 'model.hidden' lists {len(sizes)} sizes but model.num_layers is "
        f"{m.num_layers}.")
  if m.name in cells_lib.CELLS:
    unknown = sorted(set(kwargs) - set(cells_lib.cell_fields(m.name)))
    if unknown:
      raise ValueError(
          f"config: 'model.cell' sets {unknown}, which cell {m.name!r} (model.name) does not "
          f"take; its options are {sorted(cells_lib.cell_options(m.name))}. To train another "
          f"model, choose its preset (--config=<file>.py:{m.name}) rather than "
          f"--config.model.name.")
  return [cells_lib.make_cell(m.name, int(n), **kwargs) for n in sizes]


def segment_length_option(value: Any) -> Any:
  """``config.model.segment_length`` for ``Recurrent``: ``''`` / ``'0'`` / ``0`` -> None (no
  segments), ``'auto'``, or an int from ``'k'`` / ``k`` (the command line gives a string)."""
  if value is None or (isinstance(value, str) and value.strip() in ("", "0")):
    return None
  if isinstance(value, str):
    value = value.strip()
    if value == "auto":
      return value
    if not value.isdigit():
      raise ValueError(f"config: 'model.segment_length' must be '' (no segments), 'auto' or "
                       f"a number of steps >= 1; got {value!r}.")
    value = int(value)
  return recurrences.check_segment_length("config: model", value, max(int(value), 1))


def _layer_options(m) -> dict:
  """The stack's options of ``config.model`` shared by both heads."""
  output = m.get("output_dropout", None)
  return dict(dropout_rate=float(m.get("dropout", 0.0)),
              input_dropout_rate=float(m.get("input_dropout", 0.0)),
              output_dropout_rate=None if output is None else float(output),
              unroll=int(m.get("unroll", 1)),
              checkpoint=bool(m.get("checkpoint", False)), fused=bool(m.get("fused", True)),
              input_projection=str(m.get("input_projection", "auto")),
              segment_length=segment_length_option(m.get("segment_length", "")))


def per_step_model(config, num_outputs: int, **kwargs):
  """A per-step predictor (one output per input step) over a stack of the configured cells."""
  m = config.model
  return models.SequencePredictor(
      cells=build_cells(config), num_outputs=num_outputs,
      **_layer_options(m), **kwargs)


def last_state_model(config, num_outputs: int, **kwargs):
  """A last-state classifier over a stack of the configured cells."""
  m = config.model
  return models.SequenceClassifier(
      cells=build_cells(config), num_outputs=num_outputs,
      **_layer_options(m), **kwargs)
