"""Registry of the synthetic tasks: ``get_task(name, **options)``."""

from __future__ import annotations

import dataclasses
from typing import Any

from lvf_jax.tasks import adding, base, copying, denoise, parenthesis

#: Task classes by name.
TASKS: dict[str, type[base.SyntheticTask]] = {
    "copy": copying.CopyTask,
    "adding": adding.AddingTask,
    "denoise": denoise.DenoiseTask,
    "parenthesis": parenthesis.ParenthesisTask,
}

#: Sequence lengths ``T`` used in the papers, and longer ones, per task (any positive ``T`` is
#: accepted; see each task's docstring for what ``T`` means and the resulting ``seq_len``).
PAPER_LENGTHS: dict[str, tuple[int, ...]] = {
    name: cls.PAPER_LENGTHS for name, cls in TASKS.items()}


def task_names() -> tuple[str, ...]:
  """Names accepted by :func:`get_task`."""
  return tuple(TASKS)


def task_options(name: str) -> dict[str, Any]:
  """The options of task ``name`` with their defaults."""
  cls = _lookup("task_options", name)
  return {f.name: f.default for f in dataclasses.fields(cls)}


def _lookup(fn: str, name: Any) -> type[base.SyntheticTask]:
  if not isinstance(name, str) or name not in TASKS:
    raise ValueError(
        f"{fn}: argument 'name' must be one of {task_names()}; got {name!r}.")
  return TASKS[name]


def get_task(name: str, **options: Any) -> base.SyntheticTask:
  """Builds a synthetic task.

  Args:
    name: one of ``'copy'``, ``'adding'``, ``'denoise'``, ``'parenthesis'``.
    **options: the task's options (e.g. ``T=1000``); see :func:`task_options`.

  Returns:
    The (frozen, hashable) task instance.

  Raises:
    ValueError: unknown task name, unknown option, or invalid option value.
  """
  cls = _lookup("get_task", name)
  valid = tuple(f.name for f in dataclasses.fields(cls))
  unknown = sorted(set(options) - set(valid))
  if unknown:
    raise ValueError(
        f"get_task: unknown option(s) {unknown} for task {name!r}; valid options are "
        f"{valid}.")
  return cls(**options)
