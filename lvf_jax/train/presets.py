"""Turning a config file's presets (``configs/<task>.py``) into full configs.

Every preset is written out in its file; :func:`preset_config` (a synthetic task) and
:func:`dataset_config` (a dataset: adds the ``download`` option) select one by name and fill in
every other field at its default (:func:`lvf_jax.train.config.make_config`).
"""

from __future__ import annotations

import warnings
from typing import Any

import ml_collections

from lvf_jax import cells as cells_lib
from lvf_jax.train.config import make_config, select

__all__ = ["MODELS", "TABLE_MODELS", "UNITARY_MODELS", "dataset_config", "default_preset",
           "preset_config"]




def offered(where: str) -> tuple[str, ...]:
  """The families of :data:`lvf_jax.cells.CELLS` whose cell declares ``offered == where``
  (``StructuredCell.offered``), in registration order."""
  return tuple(name for name, cls in cells_lib.CELLS.items() if cls.offered == where)


#: The unitary baselines of the lvfRNN paper's Tables 1-4, configured for the datasets of those
#: tables (copy, ptb_char, timit, jsb, musedata): the families that declare
#: ``offered = 'unitary_tables'``.
UNITARY_MODELS = offered("unitary_tables")
#: Models offered only by the configs of the tables that name them (``'own_tables'``): the
#: soft orthogonal RNN and KRU (AntisymmetricRNN Table 1).
TABLE_MODELS = offered("own_tables")
#: The models every dataset config offers (``'every_config'``): every family but the unitary
#: baselines, :data:`TABLE_MODELS` and those of the synthetic tasks only (GORU).
MODELS = offered("every_config")

#: Types of the options whose default is None (so that ``--config.task.options.X=...`` works).
_OPTION_TYPES = {"data_dir": str, "tfds_dir": str, "max_train_examples": int,
                 "max_eval_examples": int, "max_len": int, "max_train_tokens": int,
                 "max_eval_tokens": int, "embed_dim": int}


def default_preset(model: str, hidden: Any, *, optimizer: str = "adam",
                   learning_rate: float = 1e-3, **optim) -> dict:
  """A preset for ``model`` where the papers are silent: the cell's paper defaults.

  Deprecated: the shipped configs write every preset out; this helper goes in the next release.

  lvf: tanh, explicit Euler, tau 1 (lvfRNN Table 5's most common row); exprnn / nnrnn: Cayley
  init, orthogonal learning rate ``lr / 10`` (expRNN); scornn / ncgru: ``rho = n // 10``
  (-1 entries of ``D``); ncgru: ``U_c`` stored as a matrix and trained by the Neumann-Cayley
  update (NC-GRU Alg. 1, exact inverse every 50 updates); antisymmetric: eps 0.1, gamma 0.01;
  nnrnn: delta 1e-4, T decay 1e-6 (nnRNN copy set-up); urnn / eurnn / fcurnn: the cells'
  reference defaults (EUNN capacity 2; fcurnn's unitary W by the multiplicative Cayley
  step at ``lr_orth = lr / 10``); softorth: spectral margin 1, ``U`` and ``V`` by the
  multiplicative Cayley step (Vorontsov et al. 2017's geodesic update) at ``lr / 10``; kru:
  complex ``2 x 2`` factors (Jose et al. 2018's smallest), soft unitary penalty 1e-4.
  """
  warnings.warn("lvf_jax.train.presets.default_preset is deprecated: write the preset out "
                "(see configs/)", DeprecationWarning, stacklevel=2)
  n = min(hidden) if isinstance(hidden, (list, tuple)) else hidden
  opt = dict(optimizer=optimizer, learning_rate=learning_rate, **optim)
  cell: dict = {}
  if model == "lvf":
    cell = dict(integrator="euler", tau=1.0, activation="tanh")
  elif model == "exprnn":
    cell = dict(orthogonal_init="cayley")
  elif model == "scornn":
    cell = dict(rho=max(1, n // 10))
  elif model == "ncgru":
    rho = max(1, n // 10)
    cell = dict(rho=rho, orthogonal_param="matrix")
    opt = dict(opt, orthogonal_method="neumann_cayley", rho=rho, reset_every=50)
  elif model in ("antisymmetric", "gated_antisymmetric"):
    cell = dict(epsilon=0.1, gamma=0.01)
  elif model == "nnrnn":
    cell = dict(orthogonal_init="cayley", delta=1e-4, t_decay=1e-6)
  elif model == "eurnn":
    cell = dict(capacity=2)
  elif model == "softorth":
    cell = dict(margin=1.0)
    opt = dict(opt, orthogonal_method="multiplicative")
  elif model == "kru":
    cell = dict(factor_size=2, unitary_penalty=1e-4)
  elif model not in MODELS + UNITARY_MODELS + TABLE_MODELS:
    raise ValueError(
        f"default_preset: argument 'model' must be one of "
        f"{MODELS + UNITARY_MODELS + TABLE_MODELS}; got {model!r}.")
  return dict(hidden=hidden, cell=cell, optim=opt)


def dataset_config(dataset: str, model: str, presets: dict, *, options: dict, train: dict):
  """:func:`preset_config` for a dataset: its options also hold ``download`` (False)."""
  return preset_config(dataset, model, presets, options={"download": False, **options},
                       train=train)


def preset_config(task: str, model: str, presets: dict, *, options: dict, train: dict):
  """The config of the preset ``model`` of ``configs/<task>.py``.

  ``presets[model]`` holds ``hidden`` (an int, or one size per layer), and optionally
  ``model`` (the cell's name when the preset's name is another, e.g. ``'lvf_literal'``),
  ``num_layers``, ``dropout``, ``input_dropout``, ``output_dropout``, ``cell``, ``optim``,
  ``train`` (updating ``train``) and ``options`` (updating ``options``). Options whose value
  is None become typed placeholders, so every option can be set from the command line.
  """
  p = select(presets, model, f"configs/{task}.py")
  hidden = p["hidden"]
  layered = isinstance(hidden, (list, tuple))
  opts = {k: (ml_collections.config_dict.placeholder(_OPTION_TYPES.get(k, int))
              if v is None else v) for k, v in {**options, **p.get("options", {})}.items()}
  c = make_config(task, opts, p.get("model", model), hidden[0] if layered else hidden,
                  cell=p.get("cell"), optim=p.get("optim"),
                  train={**train, **p.get("train", {})},
                  num_layers=len(hidden) if layered else int(p.get("num_layers", 1)),
                  dropout=float(p.get("dropout", 0.0)),
                  input_dropout=float(p.get("input_dropout", 0.0)),
                  output_dropout=p.get("output_dropout"))
  if layered:  # one hidden size per layer (ConfigDict fields keep their type: replace it)
    del c.model["hidden"]
    c.model.hidden = tuple(int(h) for h in hidden)
  return c
