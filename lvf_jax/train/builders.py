"""Build the task pipeline, the model (:mod:`lvf_jax.train.model_builder`) and the optimiser
from a config."""

from __future__ import annotations

import functools
from typing import Any

import jax
import optax

from lvf_jax import optim
from lvf_jax import tasks as tasks_lib
from lvf_jax.train import model_builder
from lvf_jax.train import task_pipeline
from lvf_jax.train.model_builder import build_model
from lvf_jax.train.task_pipeline import Pipeline, SyntheticPipeline

Array = jax.Array

__all__ = ["abstract_variables", "build_model", "build_optimizer", "build_pipeline",
           "init_variables", "optimizer_fields", "pipeline_names"]


def pipeline_names() -> tuple[str, ...]:
  from lvf_jax.train import dataset_pipelines  # on use: the synthetic tasks never load TFDS
  return tuple(tasks_lib.task_names()) + tuple(dataset_pipelines.PIPELINES)


def build_pipeline(config) -> Pipeline:
  """The task pipeline named by ``config.task.name``: a synthetic task or a real dataset."""
  from lvf_jax.train import dataset_pipelines  # on use: the synthetic tasks never load TFDS
  options = dict(config.task.get("options", {}) or {})
  name = config.task.name
  tbptt = config.train.get("tbptt", 0)
  pool = config.train.get("train_pool", 0)
  if name in dataset_pipelines.PIPELINES:
    if pool:
      raise ValueError(
          f"config: 'train.train_pool' applies to the synthetic tasks; {name!r} trains on "
          f"its dataset's training split.")
    if tbptt:
      raise ValueError(
          f"config: 'train.tbptt' applies to the synthetic tasks; {name!r} has its own "
          f"truncation where it has one (task.options.bptt of the PTB datasets).")
    return dataset_pipelines.PIPELINES[name](config, **options)
  if name not in tasks_lib.task_names():
    raise ValueError(
        f"config: 'task.name' must be one of {sorted(pipeline_names())}; got {name!r}.")
  task = tasks_lib.get_task(name, **options)
  t = config.train
  sizes = (int(t.batch_size), int(t.get("eval_size", 512)), int(t.get("eval_batch_size", 256)),
           task_pipeline.check_train_pool(pool, int(t.batch_size)))
  if task_pipeline.check_tbptt(tbptt, task.seq_len):
    return task_pipeline.TruncatedSyntheticPipeline(
        task, *sizes, tbptt=int(tbptt),
        carries=model_builder.initial_carries(config, int(t.batch_size)))
  return SyntheticPipeline(task, *sizes)


_TRAIN_ONLY_OPTIM_FIELDS = ("dtriv_every", "dtriv_orthonormalize_every")

#: Orthogonal updates whose ``D`` has ``rho`` entries -1 (scoRNN; NC-GRU Alg. 1): the cell's.
RHO_METHODS = ("neumann_cayley", "scornn")


def optim_with_cell_rho(optim: dict, cell: dict) -> dict:
  """``optim`` with ``rho`` taken from ``cell`` where its orthogonal update needs one and
  ``optim`` does not give it, so that a preset states ``rho`` once."""
  optim = dict(optim or {})
  rho = (cell or {}).get("rho")
  if optim.get("orthogonal_method") in RHO_METHODS and "rho" not in optim and rho is not None:
    optim["rho"] = rho
  return optim


def _check_rho(config, fields: dict) -> None:
  method, rho = fields.get("orthogonal_method"), config.model.cell.get("rho")
  if method in RHO_METHODS and rho is not None and fields.get("rho") != rho:
    raise ValueError(
        f"config: 'optim.rho' ({fields.get('rho')!r}) must equal 'model.cell.rho' ({rho!r}): "
        f"the {method} update's D is the cell's.")


def optimizer_fields(config) -> dict[str, Any]:
  """``config.optim`` without the fields the training loop handles itself (dtriv)."""
  return {k: v for k, v in config.optim.to_dict().items() if k not in _TRAIN_ONLY_OPTIM_FIELDS}


def build_optimizer(config) -> optax.GradientTransformationExtraArgs:
  """``lvf_jax.optim.make_optimizer`` of ``config.optim`` (``total_steps`` filled in)."""
  fields = optimizer_fields(config)
  _check_rho(config, fields)
  if fields.get("lr_schedule") == "cosine" and not fields.get("total_steps"):
    fields["total_steps"] = int(config.train.steps)
  return optim.make_optimizer(fields)


def init_variables(model, pipeline, key: Array) -> dict:
  """Initial variables of ``model`` for inputs of the pipeline's shape.

  ``key`` draws the parameters; the dropout stream of the initialising call gets its own
  key derived from it.
  """
  return model.init({"params": key, "dropout": jax.random.fold_in(key, 1)},
                    pipeline.init_inputs())


def abstract_variables(model, pipeline) -> Any:
  """Shapes of the initial variables (traces the model without compiling it)."""
  return jax.eval_shape(functools.partial(init_variables, model, pipeline), jax.random.key(0))
