"""Training: ``train_and_evaluate(config, workdir)``, checkpoints, metrics, the CLI.

See ``docs/ARCHITECTURE.md`` for how a batch flows from a task through the model, the
loss (plus the cells' regularisation terms) and the partitioned optimiser.
"""

import importlib
import warnings

from lvf_jax.train.builders import build_model, build_optimizer, build_pipeline
from lvf_jax.train.config import base_config, validate_config
from lvf_jax.train.loop import NonFiniteLossError, train_and_evaluate
from lvf_jax.train.resume import ConfigMismatchError
from lvf_jax.train.stop import StoppedBySignal

__all__ = [
    "ConfigMismatchError", "NonFiniteLossError", "StoppedBySignal", "base_config",
    "build_model", "build_optimizer", "build_pipeline", "train_and_evaluate",
    "validate_config",
]

#: Modules renamed after 0.1.0, reachable under their old names (with a DeprecationWarning) for one
#: release: ``from lvf_jax.train import pipeline`` / ``pipelines``.
_RENAMED = {"pipeline": "task_pipeline", "pipelines": "dataset_pipelines"}


def __getattr__(name: str):
  if name in _RENAMED:
    new = f"{__name__}.{_RENAMED[name]}"
    warnings.warn(f"{__name__}.{name} is deprecated: use {new}", DeprecationWarning,
                  stacklevel=2)
    return importlib.import_module(new)
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
