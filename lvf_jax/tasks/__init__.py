"""Synthetic long-memory tasks: copy, adding, denoise, parenthesis (the papers' encodings).

Pure-JAX, jit-able, seeded generators with their losses, metrics, no-memory baselines and
fixed validation/test splits. See :mod:`lvf_jax.tasks.base` for the shared conventions.

Example::

  import jax, jax.numpy as jnp
  from lvf_jax import tasks
  task = tasks.get_task("copy", T=1000)
  batch = jax.jit(task.sample, static_argnums=1)(jax.random.key(0), 128)
  logits = jnp.zeros((128, task.seq_len, task.output_size))  # a model's outputs
  loss = task.loss(logits, batch)
  print(task.describe())            # includes the no-memory baseline
"""

from lvf_jax.tasks.adding import AddingTask
from lvf_jax.tasks.base import SPLIT_SEEDS, Batch, SyntheticTask
from lvf_jax.tasks.copying import CopyTask
from lvf_jax.tasks.denoise import DenoiseTask
from lvf_jax.tasks.parenthesis import ParenthesisTask, count_marginals
from lvf_jax.tasks.registry import PAPER_LENGTHS, TASKS, get_task, task_names, task_options

__all__ = [
    "AddingTask", "Batch", "CopyTask", "DenoiseTask", "PAPER_LENGTHS", "ParenthesisTask",
    "SPLIT_SEEDS", "SyntheticTask", "TASKS", "count_marginals", "get_task", "task_names",
    "task_options",
]
