"""Command line: ``lvf-jax --config=copy.py:lvf --workdir=DIR``.

``--config`` takes a config file and a preset, ``<file>.py:<preset>``: a path (e.g.
``configs/copy.py:lvf`` in a checkout, or your own file) or, when no such file exists, the
name of a shipped config (``lvf_jax.configs``). ``--download`` lets a dataset task fetch raw
files missing from the data directory. Errors in the config or the data (a missing, corrupt or
incomplete file) are one line and exit status 2; a non-finite loss exits with 3; SIGTERM or
SIGINT stops the run after its current step, checkpointed, and exits with 128 + the signal's
number (143, 130). Every config field can be overridden
(``--config.model.hidden=256``). Unknown task or model names list the valid ones and invalid
values fail before anything is compiled. ``python -m experiments.main`` is the same command
in a checkout.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Optional, Sequence

from absl import app, flags
from ml_collections import config_flags

_CONFIG = config_flags.DEFINE_config_file(
    "config", None, "Training config '<file>.py:<preset>': a path, or the name of a shipped "
    "config (e.g. copy.py:lvf, jsb.py:lvf).", lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Directory for checkpoints, metrics, plots.")
_DOWNLOAD = flags.DEFINE_bool(
    "download", False, "Download raw data files missing from the data directory where a public "
    "source exists (sets config.task.options.download).")


def shipped_configs_dir() -> Optional[str]:
  """The directory of the shipped configs: the installed ``lvf_jax.configs``, else the
  ``configs/`` of the checkout this package runs from; None if neither exists."""
  spec = importlib.util.find_spec("lvf_jax.configs")
  if spec is not None and spec.submodule_search_locations:
    return list(spec.submodule_search_locations)[0]
  checkout = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__)))), "configs")
  return checkout if os.path.isfile(os.path.join(checkout, "__init__.py")) else None


def resolve_config_arg(value: str) -> str:
  """``value`` of ``--config`` with its file resolved: kept when the file exists, else the
  shipped config of that name (``copy.py:lvf`` -> ``.../lvf_jax/configs/copy.py:lvf``)."""
  path, sep, preset = value.partition(":")
  if os.path.exists(path):
    return value
  shipped = shipped_configs_dir()
  candidate = None if shipped is None else os.path.join(shipped, os.path.basename(path))
  if candidate and os.path.isfile(candidate) and os.path.dirname(path) in ("", "configs"):
    return candidate + sep + preset
  return value  # absl reports the missing file


def _config_values(argv: Sequence[str]) -> list[tuple[int, str, str]]:
  """``(index, prefix, value)`` of every ``--config=X`` (``argv[index] = prefix + X``) and
  ``--config X`` (the value is the next argument, no prefix)."""
  out = []
  for i, arg in enumerate(argv):
    if arg.startswith("--config="):
      out.append((i, "--config=", arg[len("--config="):]))
    elif arg == "--config" and i + 1 < len(argv):
      out.append((i + 1, "", argv[i + 1]))
  return out


def resolve_argv(argv: Sequence[str]) -> list[str]:
  """``argv`` with the file of ``--config=X`` / ``--config X`` resolved."""
  out = list(argv)
  for i, prefix, value in _config_values(argv):
    out[i] = prefix + resolve_config_arg(value)
  return out


def _exit_with_error(message: str) -> None:
  print(f"lvf_jax: error: {message}", file=sys.stderr)
  sys.exit(2)


def _is_data_error(e: BaseException) -> bool:
  """Whether ``e`` is a :class:`lvf_jax.data.DataError` (a missing, corrupt or incomplete raw
  file); without importing the data layer, which only a dataset task loads."""
  paths = sys.modules.get("lvf_jax.data.paths")
  return paths is not None and isinstance(e, paths.DataError)


def allow_download(config) -> bool:
  """Sets ``config.task.options.download = True``; False (config unchanged) when the task
  reads no data files."""
  options = config.task.get("options", None)
  if options is None or "download" not in options:
    return False
  options.download = True
  return True


def main(argv) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"Too many command-line arguments: {argv[1:]}")
  from absl import logging
  if not flags.FLAGS["verbosity"].present:
    logging.set_verbosity(logging.WARNING)  # orbax logs every save at INFO
  from lvf_jax.train import loop, stop  # heavy imports after flag parsing
  config = _CONFIG.value
  if config is None or _WORKDIR.value is None:
    raise app.UsageError("both --config and --workdir are required.")
  if _DOWNLOAD.value and not allow_download(config):
    print(f"lvf_jax: --download ignored: the task {config.task.name!r} reads no data files.",
          file=sys.stderr)
  try:
    runner = config.get("runner", None)
    if runner == "compare":
      from lvf_jax.train import compare
      compare.run(config, _WORKDIR.value)
    else:
      loop.train_and_evaluate(config, _WORKDIR.value)
  except ValueError as e:  # bad configuration: a one-line message, no traceback
    _exit_with_error(str(e))
  except loop.NonFiniteLossError as e:
    print(f"lvf_jax: {e}", file=sys.stderr)
    sys.exit(3)
  except stop.StoppedBySignal as e:  # checkpointed: the status of a process the signal ended
    print(f"lvf_jax: {e}", file=sys.stderr)
    sys.exit(e.exit_status)
  except Exception as e:  # pylint: disable=broad-except
    if not _is_data_error(e):
      raise
    _exit_with_error(str(e))  # a missing or corrupt raw file: one line, as a bad value


def parse_flags(argv: Sequence[str]) -> list[str]:
  """absl's flag parsing, with a bad ``--config`` (a missing file, an unknown preset, an
  unknown field) or a bad flag reported in one line and exit status 2, not a traceback."""
  for _, _, value in _config_values(argv):
    if not os.path.isfile(value.partition(":")[0]):
      shipped = shipped_configs_dir()
      names = sorted(f for f in os.listdir(shipped) if f.endswith(".py") and f[0] != "_") \
          if shipped else []
      _exit_with_error(f"--config={value}: no such config file; give a path or the name of a "
                       f"shipped config: {names}.")
  try:
    return flags.FLAGS(list(argv))
  except flags.Error as e:
    cause = e.__context__
    message = str(cause) if isinstance(cause, (ValueError, OSError)) else str(e)
    _exit_with_error(message.strip().splitlines()[-1])
  except (AttributeError, KeyError) as e:  # --config.<field> that the config lacks
    field = next((a.split("=")[0] for a in argv if a.startswith("--config.")), "--config.*")
    while isinstance(e, BaseException) and e.args:  # AttributeError(KeyError(message))
      e = e.args[0]
    detail = " ".join(str(e).split())
    _exit_with_error(f"{field}: no such config field ({detail}).")


def run() -> None:
  """Console-script entry point ``lvf-jax``."""
  for name in ("config", "workdir"):  # shown by --help (absl lists the main module's flags)
    flags.FLAGS.register_key_flag_for_module(sys.argv[0], flags.FLAGS[name])
  flags.mark_flags_as_required(["config", "workdir"])
  app.run(main, argv=resolve_argv(sys.argv), flags_parser=parse_flags)


if __name__ == "__main__":
  run()
