"""Released weights: trained models of the reproduced table rows.

Each released model is a directory ``lvf_jax/zoo/models/<name>/`` with

* ``config.json``: the full training config (``ml_collections``, as the run wrote it);
* ``variables.msgpack``: the Flax variables of the best validation step (``params`` and any
  non-trainable collection), in Flax's msgpack serialisation;
* ``card.json`` / ``README.md``: the model card: paper, table and row, data, the metric of
  the run and the paper's value, the command and commit that trained it, and ``check``: the
  metric re-measured on a fixed evaluation slice (``check.overrides`` applied to the config,
  ``check.split``), which :func:`evaluate` recomputes, and ``check.tolerance``: the relative
  change of each metric that rounding alone can cause (:func:`rounding_tolerance`).

Example::

  from lvf_jax import zoo
  model, variables, config = zoo.load("lvf-t4-copy-urnn")
  print(zoo.card("lvf-t4-copy-urnn")["result"])
  print(zoo.evaluate("lvf-t4-copy-urnn"))   # {'loss': ..., 'accuracy': ...}
  # zoo.load_run("runs/my_run") loads a training workdir's best step the same way

Real-data models read their data from ``$LVF_JAX_DATA_DIR`` like every pipeline.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, Optional

import flax
import jax
import ml_collections
import numpy as np

MODELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
CONFIG, VARIABLES, CARD, README = "config.json", "variables.msgpack", "card.json", "README.md"


def names() -> list[str]:
  """The released models, sorted."""
  if not os.path.isdir(MODELS_DIR):
    return []
  return sorted(d for d in os.listdir(MODELS_DIR)
                if os.path.exists(os.path.join(MODELS_DIR, d, CARD)))


def _dir(name: str) -> str:
  available = names()
  if name not in available:
    raise ValueError(f"lvf_jax.zoo: unknown model {name!r}; released models are {available}.")
  return os.path.join(MODELS_DIR, name)


def card(name: str) -> dict[str, Any]:
  """The model card of ``name`` (a dict; see the module docstring)."""
  with open(os.path.join(_dir(name), CARD)) as f:
    return json.load(f)


def _read_config(path: str) -> ml_collections.ConfigDict:
  """A stored config, with the values of the cell options it predates whose default changed
  (:func:`lvf_jax.train.config.with_predated_values`)."""
  from lvf_jax.train import config as config_lib  # pylint: disable=g-import-not-at-top
  with open(path) as f:
    return config_lib.with_predated_values(ml_collections.ConfigDict(json.load(f)))


def config(name: str) -> ml_collections.ConfigDict:
  """The training config of ``name``."""
  return _read_config(os.path.join(_dir(name), CONFIG))


def _variables(path: str) -> dict:
  with open(path, "rb") as f:
    return flax.serialization.msgpack_restore(f.read())


def _load_files(config_path: str, variables_path: str):
  from lvf_jax.train import builders  # pylint: disable=g-import-not-at-top
  c = _read_config(config_path)
  model = builders.build_model(c, builders.build_pipeline(c).model_head())
  return model, _variables(variables_path), c


def load(name: str):
  """``(model, variables, config)`` of a released model.

  ``model.apply(variables, inputs)`` runs it (``inputs`` of shape ``(batch, time,
  features)``; task-specific extras such as sequence lengths as in
  :mod:`lvf_jax.train.dataset_pipelines`).
  """
  return _load_files(os.path.join(_dir(name), CONFIG), os.path.join(_dir(name), VARIABLES))


def _run_files(run_dir: str, where: str) -> tuple[str, str]:
  from lvf_jax.train import loop  # pylint: disable=g-import-not-at-top
  paths = (os.path.join(run_dir, CONFIG), os.path.join(run_dir, loop.BEST_VARIABLES))
  missing = [os.path.basename(p) for p in paths if not os.path.exists(p)]
  if missing:
    raise ValueError(f"lvf_jax.zoo.{where}: argument 'run_dir' must be a training workdir "
                     f"after its first evaluation (config.json and {loop.BEST_VARIABLES}); "
                     f"{run_dir!r} has no {' or '.join(missing)}.")
  return paths


def load_run(run_dir: str):
  """``(model, variables, config)`` of a training workdir's best validation step (its
  ``config.json`` and ``best_variables.msgpack``, as :func:`load` gives a released model)."""
  return _load_files(*_run_files(run_dir, "load_run"))


def _set_fields(c: ml_collections.ConfigDict, overrides: dict) -> None:
  from lvf_jax.train.config import set_field  # pylint: disable=g-import-not-at-top
  for dotted, value in overrides.items():
    set_field(c, dotted, value)


def evaluate_variables(c: ml_collections.ConfigDict, variables: dict,
                       split: str = "test") -> dict[str, float]:
  """The metrics of ``variables`` (e.g. a run's best variables, changed by the caller) on a
  whole ``split`` ('validation' or 'test') of the task of config ``c``, measured by the
  training loop's evaluation."""
  from lvf_jax.train import builders, loop  # pylint: disable=g-import-not-at-top
  pipeline = builders.build_pipeline(c)
  model = builders.build_model(c, pipeline.model_head())
  eval_step = jax.jit(loop.make_eval_step(model, pipeline))
  params = variables["params"]
  extras = {k: v for k, v in variables.items() if k != "params"}
  return loop.evaluate(eval_step, pipeline, params, extras, split)


#: Safety factor of :func:`rounding_tolerance` over the largest change it measures.
TOLERANCE_SAFETY = 2.0
#: Random perturbations :func:`rounding_tolerance` draws.
TOLERANCE_DRAWS = 4
#: Least relative tolerance of an accuracy: it moves in steps of one prediction, and a
#: prediction whose two best logits tie to within rounding can flip on another CPU without
#: any of the draws flipping it. 1e-3 is a few predictions of the thousands an evaluation
#: counts.
DISCRETE_FLOOR = 1e-3


def _perturbed(variables: dict, eps: float, rng: np.random.Generator) -> dict:
  """``variables`` with every floating entry ``w`` replaced by ``w (1 + eps s)``, ``s = +-1``."""

  def one(a):
    a = np.asarray(a)
    if not np.issubdtype(a.dtype, np.floating):
      return a
    signs = rng.choice(np.asarray([-1.0, 1.0]), size=a.shape)
    return (a.astype(np.float64) * (1 + eps * signs)).astype(a.dtype)

  return jax.tree_util.tree_map(one, variables)


def rounding_tolerance(c: ml_collections.ConfigDict, variables: dict, split: str, *,
                       draws: Optional[int] = None, seed: int = 0,
                       base: Optional[dict] = None) -> dict[str, float]:
  """The relative change of each metric that rounding alone can cause, per metric.

  Another BLAS (CPU kind, thread count) sums in another order: a product of length ``n``
  then differs by about ``sqrt(n)`` units in the last place (``u``, the dtype's machine
  epsilon / 2) per entry. A long recurrence amplifies that, by a factor the model and its
  data set. This measures the amplification: every floating parameter is multiplied by
  ``1 + eps s`` with random signs ``s`` and ``eps = sqrt(n) u`` (``n`` the hidden size),
  ``draws`` times, and the tolerance of a metric is :data:`TOLERANCE_SAFETY` times the
  largest relative change of the metric over the draws (at least :data:`DISCRETE_FLOOR`
  for an accuracy).

  Args:
    c: the evaluation config (the card's overrides applied).
    variables: the model's variables.
    split: the evaluated split.
    draws: number of random perturbations (default :data:`TOLERANCE_DRAWS`).
    seed: seed of their signs.
    base: the unperturbed evaluation's metrics, when the caller has them.

  Returns:
    ``{metric: relative tolerance}`` for every metric of the evaluation.
  """
  leaves = [np.asarray(a) for a in jax.tree_util.tree_leaves(variables)]
  dtype = next(a.dtype for a in leaves if np.issubdtype(a.dtype, np.floating))
  eps = float(np.sqrt(int(c.model.hidden)) * np.finfo(dtype).eps / 2)
  base = evaluate_variables(c, variables, split) if base is None else base
  rng = np.random.default_rng(seed)
  worst = {k: 0.0 for k in base}
  for _ in range(TOLERANCE_DRAWS if draws is None else draws):
    got = evaluate_variables(c, _perturbed(variables, eps, rng), split)
    for k, v in base.items():
      worst[k] = max(worst[k], abs(got[k] - v) / max(abs(v), 1e-30))
  return {k: max(TOLERANCE_SAFETY * w, DISCRETE_FLOOR if "accuracy" in k else 0.0)
          for k, w in worst.items()}


def evaluate(name: str, *, data_overrides: Optional[dict] = None) -> dict[str, float]:
  """Re-measures ``name`` on the fixed evaluation slice of its card.

  Args:
    name: a released model (:func:`names`).
    data_overrides: extra config fields for the evaluation, e.g. ``{'task.options.tfds_dir':
      '/tmp/tfds'}`` (where to prepare the data).

  Returns:
    the metrics (``loss`` and the task's others) of the card's ``check.split`` after the
    card's ``check.overrides``.
  """
  info = card(name)["check"]
  c = config(name)
  _set_fields(c, {**info["overrides"], **(data_overrides or {})})
  return evaluate_variables(c, _variables(os.path.join(_dir(name), VARIABLES)), info["split"])


def evaluate_run(run_dir: str, split: str = "test") -> dict[str, float]:
  """The metrics of a training workdir's best validation variables on a whole ``split``
  ('validation' or 'test'), measured by the training loop's evaluation with the current
  code (e.g. to add a metric a finished run did not log)."""
  config_path, variables_path = _run_files(run_dir, "evaluate_run")
  return evaluate_variables(_read_config(config_path), _variables(variables_path), split)


def _card_markdown(info: dict) -> str:
  r = info["result"]
  lines = [f"# {info['name']}", "",
           f"{info['model']} on {info['task']}: {info['paper_citation']}, Table "
           f"{info['table_number']}.", "",
           "| | value |", "|---|---|",
           *[f"| {k} (paper) | {v} |" for k, v in info["paper"].items()],
           *[f"| {k} (this model) | {v:.6g} |" for k, v in r["metrics"].items()
             if k in info["paper"]],
           f"| seed | {r.get('seed', 0)} (the run with the best validation loss among the row's "
           f"seeds; mean and spread over seeds: `docs/reproduction/{info.get('table', '')}.md`) |",
           f"| parameters | {r['parameters']} |",
           f"| steps | {r['steps']} (best validation at {r['best_validation_step']}) |",
           f"| config | `{info['config']}` |",
           f"| data | {info['data']} |",
           f"| command | `{r['command']}` |",
           f"| commit | {r['commit']} |",
           f"| machine | {r['machine']} |",
           f"| date | {r['date']} |", "",
           f"Check: on `{info['check']['split']}` with `{info['check']['overrides']}` the "
           f"model scores `{info['check']['metrics']}` (recomputed by "
           f"`lvf_jax.zoo.evaluate('{info['name']}')`), to within the relative "
           f"tolerances `{info['check'].get('tolerance', {})}` that rounding alone can "
           "cause (`lvf_jax.zoo.rounding_tolerance`).", ""]
  return "\n".join(lines)


def release(name: str, run_dir: str, *, info: dict, check_overrides: dict,
            check_split: str = "test", models_dir: Optional[str] = None) -> str:
  """Copies the best variables of the run in ``run_dir`` into the zoo as ``name``.

  Args:
    name: the released name (``<table>-<row>``).
    run_dir: a training workdir with ``config.json`` and ``best_variables.msgpack``.
    info: card fields (``model``, ``task``, ``paper``, ``paper_citation``,
      ``table_number``, ``config``, ``data``, ``result``: the harness's result dict).
    check_overrides: config fields of the fixed evaluation slice.
    check_split: its split.
    models_dir: where to write (default: the package's ``models/``).

  Returns:
    the model's directory.
  """
  from lvf_jax.train import loop  # pylint: disable=g-import-not-at-top
  src = os.path.join(run_dir, loop.BEST_VARIABLES)
  if not os.path.exists(src):
    raise ValueError(f"lvf_jax.zoo.release: {run_dir} has no {loop.BEST_VARIABLES}.")
  out = os.path.join(models_dir or MODELS_DIR, name)
  os.makedirs(out, exist_ok=True)
  shutil.copyfile(os.path.join(run_dir, "config.json"), os.path.join(out, CONFIG))
  shutil.copyfile(src, os.path.join(out, VARIABLES))
  c = _read_config(os.path.join(out, CONFIG))
  _set_fields(c, check_overrides)
  variables = _variables(os.path.join(out, VARIABLES))
  metrics = evaluate_variables(c, variables, check_split)
  full = {"name": name, **info, "check": {
      "split": check_split, "overrides": check_overrides, "metrics": metrics,
      "tolerance": rounding_tolerance(c, variables, check_split, base=metrics)}}
  _write_card(out, full)
  return out


def _write_card(out: str, full: dict) -> None:
  with open(os.path.join(out, CARD), "w") as f:
    json.dump(full, f, indent=2)
    f.write("\n")
  with open(os.path.join(out, README), "w") as f:
    f.write(_card_markdown(full))


def refresh_tolerance(name: str, *, data_overrides: Optional[dict] = None) -> dict:
  """Re-measures ``check.tolerance`` of the released ``name`` and rewrites its card."""
  full = card(name)
  info = full["check"]
  c = config(name)
  _set_fields(c, {**info["overrides"], **(data_overrides or {})})
  info["tolerance"] = rounding_tolerance(c, _variables(os.path.join(_dir(name), VARIABLES)),
                                         info["split"])
  _write_card(_dir(name), full)
  return info["tolerance"]


__all__ = [
    "CARD", "CONFIG", "MODELS_DIR", "README", "VARIABLES", "card", "config", "evaluate",
    "evaluate_run", "evaluate_variables", "load", "load_run", "names", "refresh_tolerance",
    "release", "rounding_tolerance",
]
