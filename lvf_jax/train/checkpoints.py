"""Checkpoints with orbax-checkpoint's ``CheckpointManager``.

Orbax writes each checkpoint into a temporary directory and renames it only once the
write has finished, so a save interrupted by a crash leaves no directory that
``latest_step`` would pick up: a resumed run restores the last *complete* checkpoint.
Saves are synchronous, so a checkpoint reported as saved is on disk.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import jax
import orbax.checkpoint as ocp


class Checkpointer:
  """Periodic save, keep the newest ``keep`` checkpoints, restore the latest."""

  def __init__(self, directory: str, keep: int = 3):
    self.directory = os.path.abspath(directory)
    options = ocp.CheckpointManagerOptions(
        max_to_keep=keep, create=True, enable_async_checkpointing=False)
    self._manager = ocp.CheckpointManager(self.directory, options=options)

  def latest_step(self) -> Optional[int]:
    return self._manager.latest_step()

  def all_steps(self) -> list[int]:
    return list(self._manager.all_steps())

  def save(self, step: int, state: Any) -> None:
    self._manager.save(int(step), args=ocp.args.StandardSave(state), force=True)
    self._manager.wait_until_finished()

  def restore(self, target: Any, step: Optional[int] = None) -> Any:
    """Restores ``step`` (default: latest) into the structure and dtypes of ``target``."""
    step = self.latest_step() if step is None else step
    abstract = jax.tree_util.tree_map(ocp.utils.to_shape_dtype_struct, target)
    try:
      return self._manager.restore(step, args=ocp.args.StandardRestore(abstract))
    except ValueError as e:
      first = str(e).strip().splitlines()[0]
      raise ValueError(
          f"the checkpoint of step {step} in {self.directory} does not match the train state "
          f"of this configuration (another model, task or lvf_jax version wrote it: {first}); "
          f"use a new --workdir or remove the old one.") from e

  def close(self) -> None:
    self._manager.close()
