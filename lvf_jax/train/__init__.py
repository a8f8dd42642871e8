"""Training: ``train_and_evaluate(config, workdir)``, checkpoints, metrics, the CLI.

See ``docs/ARCHITECTURE.md`` for how a batch flows from a task through the model, the
loss (plus the cells' regularisation terms) and the partitioned optimiser.
"""

from lvf_jax._deprecation import renamed_getattr
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

#: Modules renamed after 0.1.0, reachable under their old names (with a DeprecationWarning) for
#: one release: ``from lvf_jax.train import pipeline`` / ``pipelines``.
__getattr__ = renamed_getattr(__name__, globals(),
                              modules={"pipeline": "task_pipeline",
                                       "pipelines": "dataset_pipelines"})
