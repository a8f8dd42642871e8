"""Checkpoints with orbax-checkpoint's ``CheckpointManager``.

Orbax writes each checkpoint into a temporary directory and renames it only once the
write has finished, so a save interrupted by a crash leaves no directory that
``latest_step`` would pick up: a resumed run restores the last *complete* checkpoint.
Saves are synchronous, so a checkpoint reported as saved is on disk.

A checkpoint damaged on disk afterwards (a flipped byte, a truncated file) is found at
restore: :meth:`Checkpointer.restore_latest` then falls back to the newest step that
restores, moves the damaged one aside to ``damaged-<step>`` (never deletes it) and says so.
When no step restores, the checkpoints belong to another configuration and the error says
so.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

import jax
import orbax.checkpoint as ocp


class Checkpointer:
  """Periodic save, keep the newest ``keep`` checkpoints, restore the latest."""

  def __init__(self, directory: str, keep: int = 3):
    self.directory = os.path.abspath(directory)
    self._options = ocp.CheckpointManagerOptions(
        max_to_keep=keep, create=True, enable_async_checkpointing=False)
    self._manager = ocp.CheckpointManager(self.directory, options=self._options)

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

  def restore_latest(self, target: Any) -> tuple[Any, Optional[int]]:
    """``(state, step)`` of the newest step that restores into ``target`` (``(target,
    None)`` without checkpoints). Newer steps that fail while an older one restores are
    damaged: each is moved to ``damaged-<step>`` with a warning naming it."""
    steps = sorted(self.all_steps(), reverse=True)
    if not steps:
      return target, None
    failures = []
    for step in steps:
      try:
        state = self.restore(target, step)
      except Exception as e:  # pylint: disable=broad-except  (orbax / tensorstore errors)
        failures.append((step, e))
        continue
      for bad, error in failures:
        self._move_aside(bad, error)
      return state, step
    step, error = failures[0]
    if isinstance(error, ValueError):
      raise error
    raise ValueError(f"no checkpoint in {self.directory} restores (step {step}: "
                     f"{str(error).strip().splitlines()[0]}).") from error

  def _move_aside(self, step: int, error: Exception) -> None:
    self._manager.close()
    src = os.path.join(self.directory, str(step))
    dst = os.path.join(self.directory, f"damaged-{step}")
    os.replace(src, dst)
    self._manager = ocp.CheckpointManager(self.directory, options=self._options)
    cause = error.__cause__ or error  # restore() wraps orbax's error in a ValueError
    reason = str(cause).strip().splitlines()[0][:200]
    print(f"lvf_jax: warning: the checkpoint of step {step} is damaged ({reason}); moved "
          f"to {dst}, resuming from an older step.", file=sys.stderr)

  def close(self) -> None:
    self._manager.close()
