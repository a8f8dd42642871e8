"""The training config (``ml_collections.ConfigDict``) and its validation.

A config has five sections::

  config.task   name + options of the task (e.g. ``name='copy'``, ``options={'T': 200}``)
  config.model  name (a key of ``lvf_jax.cells.CELLS``), hidden, num_layers, dropout
                (between layers and before the head), input_dropout, output_dropout
                (None: ``dropout``), and
                ``cell``: keyword arguments of the cell (tau, rho, integrator, ...), and
                the layer options unroll, checkpoint, fused, input_projection,
                segment_length
  config.optim  the fields of ``lvf_jax.optim.make_optimizer`` (+ ``dtriv_every``)
  config.distributed  coordinator_address, num_processes, process_id: several processes
                (:func:`lvf_jax.train.parallel.initialize`; empty: one process)
  config.train  steps, batch_size, seed, eval/log/checkpoint periods, diagnostics (log the
                cheap diagnostics of :func:`lvf_jax.diagnostics.model_diagnostics` at every
                evaluation), ...

:func:`validate_config` checks everything that can be checked without compiling: names,
ranges, and the cell/task/optimiser constructors themselves (they raise ``ValueError``
naming the argument), so a bad value fails in milliseconds, before any XLA compilation.
"""

from __future__ import annotations

import numbers
from typing import Any, Optional

import jax
import ml_collections

from lvf_jax._validation import check_int
from lvf_jax import cells as cells_lib
from lvf_jax import optim as optim_lib
from lvf_jax.layers import INPUT_PROJECTIONS
from lvf_jax.train import builders

#: ``config.optim`` fields the training loop handles itself (not ``make_optimizer``'s).
LOOP_OPTIM_DEFAULTS = {"dtriv_every": 0, "dtriv_orthonormalize_every": 30}


def base_config() -> ml_collections.ConfigDict:
  """Defaults shared by every config in ``configs/``: every optimiser field
  (:func:`optim_config`) and an empty ``model.cell`` (:func:`make_config` fills in the
  options of the chosen cell)."""
  c = ml_collections.ConfigDict()
  c.task = ml_collections.ConfigDict({"name": "copy", "options": {}})
  c.model = ml_collections.ConfigDict({
      "name": "exprnn", "hidden": 128, "num_layers": 1, "dropout": 0.0,
      "input_dropout": 0.0,
      "output_dropout": ml_collections.config_dict.placeholder(float), "cell": {},
      "unroll": 1, "checkpoint": False, "fused": True, "input_projection": "auto",
      "segment_length": ""})
  c.optim = optim_config()
  c.distributed = ml_collections.ConfigDict({
      "coordinator_address": "",
      "num_processes": ml_collections.config_dict.placeholder(int),
      "process_id": ml_collections.config_dict.placeholder(int)})
  c.train = ml_collections.ConfigDict({
      "steps": 1000,
      "batch_size": 128,
      "seed": 5544,
      "eval_every": 100,
      "eval_size": 512,
      "eval_batch_size": 256,
      "log_every": 10,
      "checkpoint_every": 200,
      "keep_checkpoints": 3,
      "progress_bar": True,
      "tensorboard": True,
      "plot": True,
      "diagnostics": True,
      "mesh": "auto",
      "time_limit": 0.0,
      "stop_on_signal": True,
      "tbptt": 0,
      "train_pool": 0,
      "allow_resume_changes": False,
  })
  return c


def _get(section: Any, key: str, default: Any = None) -> Any:
  try:
    return section[key]
  except (KeyError, AttributeError):
    return default



def validate_config(config: ml_collections.ConfigDict):
  """Raises ``ValueError`` (naming the field, its value and what is allowed) on a bad config.

  Builds the task, a model and the optimiser *without* initialising or compiling anything.

  Returns:
    the pipeline it built (so callers need not load the data a second time).
  """
  for section in ("task", "model", "optim", "train"):
    if section not in config:
      raise ValueError(f"config: missing section '{section}'.")
  t = config.train
  check_int("config", "train.steps", t.steps)
  limit = _get(t, "time_limit", 0.0)
  if isinstance(limit, bool) or not isinstance(limit, numbers.Real) or not limit >= 0:
    raise ValueError(f"config: 'train.time_limit' must be a number of seconds >= 0 (0: no "
                     f"limit); got {limit!r}.")
  stop_on_signal = _get(t, "stop_on_signal", True)
  if not isinstance(stop_on_signal, bool):
    raise ValueError(f"config: 'train.stop_on_signal' must be True or False; got "
                     f"{stop_on_signal!r}.")
  check_int("config", "train.batch_size", t.batch_size)
  for name in ("eval_every", "log_every", "checkpoint_every", "eval_size", "eval_batch_size",
               "keep_checkpoints"):
    check_int("config", f"train.{name}", _get(t, name, 1))
  hidden = config.model.hidden
  if isinstance(hidden, (list, tuple)):  # one size per layer (e.g. NC-GRU PTB 430/1000/430)
    for i, n in enumerate(hidden):
      check_int("config", f"model.hidden[{i}]", n)
  else:
    check_int("config", "model.hidden", hidden)
  check_int("config", "model.num_layers", config.model.num_layers)
  for name in ("dropout", "input_dropout", "output_dropout"):
    rate = _get(config.model, name, 0.0)
    if rate is None and name == "output_dropout":
      continue  # the rate of model.dropout
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 <= rate < 1:
      raise ValueError(f"config: 'model.{name}' must lie in [0, 1)"
                       f"{' or be None' if name == 'output_dropout' else ''}; got {rate!r}.")
  projection = _get(config.model, "input_projection", "auto")
  if projection not in INPUT_PROJECTIONS:
    raise ValueError(f"config: 'model.input_projection' must be one of "
                     f"{list(INPUT_PROJECTIONS)}; got {projection!r}.")
  check_int("config", "optim.dtriv_every", _get(config.optim, "dtriv_every", 0) or 0, minimum=0)
  pipeline = builders.build_pipeline(config)  # validates the task name and options
  model = builders.build_model(config, pipeline.model_head())  # validates cell names
  tx = builders.build_optimizer(config)  # validates the optimiser fields
  # Tracing (no compilation) runs every cell's own argument checks (tau, rho, integrator, ...)
  # and the optimiser's checks on the parameter tree (e.g. square orthogonal matrices).
  variables = builders.abstract_variables(model, pipeline)
  jax.eval_shape(tx.init, variables["params"])
  return pipeline


def optim_config(values: dict = None) -> ml_collections.ConfigDict:
  """Every field of ``config.optim``: :func:`lvf_jax.optim.make_optimizer`'s (at their
  defaults, ``None`` ones typed so the command line can set them) and the loop's dtriv
  fields, updated with ``values``."""
  c = optim_lib.default_config()
  for key, value in {**LOOP_OPTIM_DEFAULTS, **(values or {})}.items():
    c[key] = value
  return c


def cell_config(name: str, values: dict = None) -> ml_collections.ConfigDict:
  """Every option of the cell ``name`` (:func:`lvf_jax.cells.cell_options`) at its default
  (``None`` ones typed so the command line can set them), updated with ``values``."""
  c = ml_collections.ConfigDict()
  if name in cells_lib.CELLS:  # an unknown name is reported by validate_config
    for key, (kind, default) in cells_lib.cell_options(name).items():
      c[key] = ml_collections.config_dict.placeholder(kind) if default is None else default
  for key, value in (values or {}).items():
    if key in c and c[key] is None:
      c[key] = value
    else:
      with c.ignore_type():
        c[key] = value
  return c


def predated_values(model: str) -> dict:
  """The cell options of ``model`` whose default changed, each with the value a config
  written before the change had implicitly, as the family declares them
  (``predated_values`` of its cell; ``{}`` for a name that is no cell)."""
  cls = cells_lib.CELLS.get(model)
  return dict(getattr(cls, "predated_values", {}))


def config_defaults(model: str) -> dict:
  """:func:`base_config` as a dict with the options of the cell ``model`` at their defaults:
  the values a config written before a field existed implicitly had (for an option whose
  default changed, its value before the change, :func:`predated_values`)."""
  d = base_config().to_dict()
  d["task"]["options"] = {"download": False}  # of the dataset configs (presets.dataset_config)
  d["model"]["cell"] = {**cell_config(model).to_dict(), **predated_values(model)}
  return d


def with_predated_values(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """A stored ``config`` with each cell option it predates whose default has changed set to
  the value it was trained with (:func:`predated_values`); changed in place, returned."""
  model = config.get("model") or {}
  cell = model.get("cell")
  for key, value in predated_values(model.get("name", "")).items():
    if cell is None:
      with config.model.ignore_type():
        config.model.cell = cell = {}
    if key not in cell:
      cell[key] = value
  return config


def make_config(task: str, task_options: dict, model: str, hidden: Any, *, cell: dict = None,
                optim: dict = None, train: dict = None, num_layers: int = 1,
                dropout: float = 0.0, input_dropout: float = 0.0,
                output_dropout: Optional[float] = None) -> ml_collections.ConfigDict:
  """A full config: :func:`base_config` updated with the given sections (used by ``configs/``).

  ``config.model.cell`` holds every option of the cell (:func:`cell_config`) and
  ``config.optim`` every field of the optimiser (:func:`optim_config`), so each can be set
  from the command line whether or not the preset names it.
  """
  c = base_config()
  c.task.name = task
  c.task.options = dict(task_options)
  c.model.name = model
  c.model.hidden = hidden
  c.model.num_layers = num_layers
  c.model.dropout = dropout
  c.model.input_dropout = input_dropout
  c.model.output_dropout = output_dropout  # None: the rate of ``dropout``
  c.model.cell = cell_config(model, cell)
  c.optim = optim_config(builders.optim_with_cell_rho(optim, cell))
  for key, value in (train or {}).items():
    c.train[key] = value
  return c


def set_field(config: ml_collections.ConfigDict, dotted: str, value: Any) -> None:
  """Sets ``config.a.b.c = value`` for ``dotted = 'a.b.c'`` (a new key is allowed at the leaf;
  the leaf's type may change). Raises ``ValueError`` naming a missing parent field."""
  *parents, leaf = dotted.split(".")
  node = config
  for i, key in enumerate(parents):
    if key not in node:
      raise ValueError(f"override {dotted!r}: no field {'.'.join(parents[:i + 1])!r}.")
    node = node[key]
  if isinstance(node, dict):
    node[leaf] = value
    return
  with node.ignore_type():
    node[leaf] = value


def select(presets: dict, model: str, where: str) -> dict:
  """``presets[model]``, or a ``ValueError`` listing the valid model names of ``where``."""
  if model not in presets:
    raise ValueError(
        f"{where}: unknown model {model!r}; valid models are {sorted(presets)}.")
  return presets[model]
