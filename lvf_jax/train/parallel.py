"""Data parallelism over the local devices with JAX's own runtime: a ``("data",)`` mesh, the
batch sharded over it, parameters and optimiser state replicated.

``config.train.mesh`` names the mesh: ``''`` (one device), ``'data=-1'`` (every local
device) or ``'data=<k>'`` (the first ``k``). The mesh's axes are ``Explicit`` (sharding in
types, :func:`jax.make_mesh`'s default), so every array's type says how it is sharded; the
cells, layers and optimiser transforms of lvf_jax support that.
"""

from __future__ import annotations

from typing import Any, Optional

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

AXIS = "data"


def make_mesh(spec: str) -> Optional[jax.sharding.Mesh]:
  """The mesh of ``config.train.mesh`` (None for ``''``, ``'data=1'`` or one local device).

  Raises:
    ValueError: for a spec other than ``''`` / ``'data=<k>'`` with ``k = -1`` or ``1 <= k <=``
      the number of local devices.
  """
  spec = (spec or "").strip()
  if not spec:
    return None
  name, _, value = spec.partition("=")
  available = jax.local_device_count()
  try:
    k = int(value)
  except ValueError:
    k = 0
  if name.strip() != AXIS or not (k == -1 or 1 <= k <= available):
    raise ValueError(
        f"config: 'train.mesh' must be '' (one device), 'data=-1' (all {available} local "
        f"devices) or 'data=<k>' with 1 <= k <= {available}; got {spec!r}.")
  k = available if k == -1 else k
  if k == 1:
    return None
  return jax.make_mesh((k,), (AXIS,), devices=jax.local_devices()[:k])


def check_batch_sizes(mesh: Optional[jax.sharding.Mesh], **sizes: int) -> None:
  """Raises ``ValueError`` before anything compiles when a batch size does not divide by the
  number of data-parallel devices."""
  if mesh is None:
    return
  k = mesh.shape[AXIS]
  for name, size in sizes.items():
    if int(size) % k:
      raise ValueError(
          f"config: 'train.{name}' ({size}) must divide by the {k} data-parallel devices of "
          f"train.mesh; choose a multiple of {k}.")


def replicate(tree: Any, mesh: Optional[jax.sharding.Mesh]) -> Any:
  """``tree`` placed on every device of ``mesh`` (unchanged without a mesh)."""
  if mesh is None:
    return tree
  return jax.device_put(tree, NamedSharding(mesh, PartitionSpec()))


def _batch_spec(leaf: Any, k: int) -> PartitionSpec:
  ndim = np.ndim(leaf)
  if ndim == 0 or np.shape(leaf)[0] % k:
    return PartitionSpec()  # a scalar, or a batch that does not split (a last partial one)
  return PartitionSpec(AXIS, *([None] * (ndim - 1)))


def shard_batch(batch: Any, mesh: Optional[jax.sharding.Mesh]) -> Any:
  """Every array of ``batch`` split along its first (batch) axis over ``mesh``; placed on the
  host's devices from NumPy, or resharded inside ``jit`` (unchanged without a mesh)."""
  if mesh is None:
    return batch
  k = mesh.shape[AXIS]

  def place(leaf):
    sharding = NamedSharding(mesh, _batch_spec(leaf, k))
    if isinstance(leaf, jax.core.Tracer):
      return jax.sharding.reshard(leaf, sharding)
    return jax.device_put(leaf, sharding)

  return jax.tree_util.tree_map(place, batch)
