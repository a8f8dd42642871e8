"""The config of a row: its preset under ``configs/`` with the row's overrides."""

from __future__ import annotations

import importlib.util
import os

from experiments.reproduce.provenance import ROOT
from experiments.reproduce.rows import Row
from lvf_jax.train.config import set_field


def load_config(spec: str):
  """The config of ``'<file>.py:<preset>'`` under ``configs/``."""
  if ":" not in spec:
    raise ValueError(f"config spec must be '<file>.py:<preset>'; got {spec!r}.")
  file, preset = spec.split(":", 1)
  path = os.path.join(ROOT, "configs", file)
  if not os.path.exists(path):
    raise ValueError(f"config spec {spec!r}: no file {path}.")
  module = importlib.util.module_from_spec(
      importlib.util.spec_from_file_location(f"configs_{file[:-3]}", path))
  module.__spec__.loader.exec_module(module)
  return module.get_config(preset)


def preset_config(row: Row):
  """The config of ``row``'s preset with its overrides: the model, task and budget as the
  row's table states them, before a run's seed and step count."""
  c = load_config(row.config)
  for key, value in row.overrides.items():
    set_field(c, key, value)
  return c


def task_name(row: Row) -> str:
  """The task a row's config trains (``''`` without a config)."""
  return "" if row.config is None else str(preset_config(row).task.name)
