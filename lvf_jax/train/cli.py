"""Command line: ``python -m experiments.main --config=configs/copy.py:lvf --workdir=DIR``.

Every config field can be overridden (``--config.model.hidden=256``). Unknown task or model
names list the valid ones and invalid values fail before anything is compiled.
"""

from __future__ import annotations

import sys

from absl import app, flags
from ml_collections import config_flags

_CONFIG = config_flags.DEFINE_config_file(
    "config", None, "Training config file, e.g. configs/copy.py:lvf.", lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Directory for checkpoints, metrics, plots.")


def main(argv) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"Too many command-line arguments: {argv[1:]}")
  from absl import logging
  if not flags.FLAGS["verbosity"].present:
    logging.set_verbosity(logging.WARNING)  # orbax logs every save at INFO
  from lvf_jax.train import loop  # heavy imports after flag parsing
  config = _CONFIG.value
  if config is None or _WORKDIR.value is None:
    raise app.UsageError("both --config and --workdir are required.")
  try:
    runner = config.get("runner", None)
    if runner == "compare":
      from lvf_jax.train import compare
      compare.run(config, _WORKDIR.value)
    else:
      loop.train_and_evaluate(config, _WORKDIR.value)
  except ValueError as e:  # bad configuration: a one-line message, no traceback
    print(f"lvf_jax: error: {e}", file=sys.stderr)
    sys.exit(2)
  except loop.NonFiniteLossError as e:
    print(f"lvf_jax: {e}", file=sys.stderr)
    sys.exit(3)


def run() -> None:
  """Console-script entry point ``lvf-jax``."""
  flags.mark_flags_as_required(["config", "workdir"])
  app.run(main)


if __name__ == "__main__":
  run()
