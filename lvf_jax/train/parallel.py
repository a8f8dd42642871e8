"""Data parallelism with JAX's own runtime: a ``("data",)`` mesh over the devices, the batch
sharded over it, parameters and optimiser state replicated; several processes (hosts) through
:func:`jax.distributed.initialize`.

``config.train.mesh`` names the mesh: ``'auto'`` (the default: every device on GPUs and
TPUs and across processes, one device for one CPU process; :func:`make_mesh`), ``''`` (one
device), ``'data=-1'`` (every device of every process) or ``'data=<k>'`` (the first ``k``
of one process). The mesh's axes are
``Explicit`` (sharding in types, :func:`jax.make_mesh`'s default), so every array's type says
how it is sharded; the cells, layers and optimiser transforms of lvf_jax support that.

``config.distributed`` (``coordinator_address``, ``num_processes``, ``process_id``) starts
the multi-process runtime before anything else touches JAX (:func:`initialize`): every
process runs the same command. A synthetic task's batch is drawn inside the jitted step from
the same key everywhere. A dataset's training batch is assembled per process from the rows
its devices hold (:func:`process_rows`, :func:`shard_rows`): fixed-shape examples (images,
token chunks) are read for those rows only; variable-length sequences (music, speech) are
read for the whole batch, whose padded length depends on every sequence, and cut to the
rows. The global batch is the one a single process builds. Evaluation batches are read
whole by every process. Orbax writes the checkpoints from every process; process 0 alone
writes metrics, plots and summaries.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Optional

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

AXIS = "data"


def initialize(config) -> bool:
  """Starts JAX's multi-process runtime when ``config.distributed.coordinator_address`` is
  set (``jax.distributed.initialize`` with ``num_processes`` and ``process_id``; on CPUs
  with the gloo collectives, which cross-process CPU programs need, and without the persistent
  compilation cache, whose cross-process CPU programs hang). Returns whether it did.
  Must run before any other JAX computation of the process; a second call is a no-op."""
  d = config.get("distributed", None)
  address = "" if d is None else (d.get("coordinator_address", "") or "")
  if not address:
    return False
  if jax.distributed.is_initialized():
    return True
  num, pid = d.get("num_processes", None), d.get("process_id", None)
  if num is None or pid is None or not 0 <= int(pid) < int(num):
    raise ValueError(
        f"config: 'distributed.num_processes' and 'distributed.process_id' (0 <= process_id "
        f"< num_processes) must be set with distributed.coordinator_address; got "
        f"{num!r} and {pid!r}.")
  if jax.config.jax_platforms in (None, "", "cpu") or str(
      jax.config.jax_platforms).startswith("cpu"):
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    _without_persistent_cache()
  jax.distributed.initialize(coordinator_address=address, num_processes=int(num),
                             process_id=int(pid))
  return True


def is_writer() -> bool:
  """Whether this process writes the run's files (process 0)."""
  return jax.process_index() == 0


def agree(flag: bool) -> bool:
  """``flag`` as process 0 sees it, on every process (a decision all processes must share,
  e.g. to stop at a time limit; ``flag`` itself with one process)."""
  if jax.process_count() == 1:
    return bool(flag)
  from jax.experimental import multihost_utils  # pylint: disable=g-import-not-at-top
  return bool(multihost_utils.broadcast_one_to_all(np.asarray(flag, np.bool_)))


def any_process(flag: bool) -> bool:
  """Whether ``flag`` is true on any process (``flag`` itself with one process); every
  process must call it at the same point."""
  if jax.process_count() == 1:
    return bool(flag)
  from jax.experimental import multihost_utils  # pylint: disable=g-import-not-at-top
  return bool(np.any(multihost_utils.process_allgather(np.asarray(flag, np.bool_))))


def _without_persistent_cache() -> None:
  """Turns JAX's persistent compilation cache off for a multi-process CPU run (said once when
  it was on): a cross-process CPU program read back from the cache (jax 0.12) waits in its
  first collective for ever, so every process compiles its programs afresh."""
  if jax.config.jax_enable_compilation_cache and jax.config.jax_compilation_cache_dir:
    print("lvf_jax: persistent compilation cache off for this multi-process CPU run (programs "
          "with cross-process CPU collectives read back from it hang)", flush=True)
  jax.config.update("jax_enable_compilation_cache", False)


def make_mesh(spec: str, batch_size: Optional[int] = None) -> Optional[jax.sharding.Mesh]:
  """The mesh of ``config.train.mesh`` (None for ``''``, ``'data=1'`` or one device).

  ``'auto'`` (the default): every device of every process (``'data=-1'``) on GPUs and TPUs
  and across several processes; one device for a single process on CPU, whose host
  "devices" (``--xla_force_host_platform_device_count``) share the same cores, so that
  splitting the batch over them adds compilation without speed; also one device when
  ``batch_size`` does not divide by the number of devices (said once).

  Raises:
    ValueError: for a spec other than ``''`` / ``'auto'`` / ``'data=<k>'`` with ``k = -1``
      or ``1 <= k <=`` the number of local devices.
  """
  spec = (spec or "").strip()
  if not spec:
    return None
  if spec == "auto":
    if jax.device_count() == 1 or (jax.default_backend() == "cpu"
                                   and jax.process_count() == 1):
      return None
    if batch_size is not None and int(batch_size) % jax.device_count():
      print(f"lvf_jax: train.mesh='auto' uses one device: the batch of {batch_size} does not "
            f"divide by the {jax.device_count()} devices (set train.batch_size to a multiple, "
            f"or train.mesh='' to silence this)")
      return None
    spec = f"{AXIS}=-1"
  name, _, value = spec.partition("=")
  available = jax.device_count() if value.strip() == "-1" else jax.local_device_count()
  try:
    k = int(value)
  except ValueError:
    k = 0
  if name.strip() != AXIS or not (k == -1 or 1 <= k <= available):
    raise ValueError(
        f"config: 'train.mesh' must be '' (one device), 'auto', 'data=-1' (all {available} "
        f"devices) or 'data=<k>' with 1 <= k <= {available}; got {spec!r}.")
  if k == -1:  # every device of every process
    return None if available == 1 else jax.make_mesh((available,), (AXIS,))
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


def _place(leaf: Any, sharding: NamedSharding) -> Any:
  """A host value (the same on every process) as a global array of ``sharding``: each
  process contributes the shards of its own devices."""
  leaf = np.asarray(leaf)
  return jax.make_array_from_callback(leaf.shape, sharding, lambda index: leaf[index])


def replicate(tree: Any, mesh: Optional[jax.sharding.Mesh]) -> Any:
  """``tree`` placed on every device of ``mesh``; without a mesh, committed to this
  process's first device, as a restored checkpoint and every step's outputs are, so that
  the step compiles once whether it starts afresh or from a checkpoint."""
  if mesh is None:
    return jax.device_put(tree, jax.local_devices()[0])
  sharding = NamedSharding(mesh, PartitionSpec())
  if jax.process_count() == 1:
    return jax.device_put(tree, sharding)
  return jax.tree_util.tree_map(lambda leaf: _place(jax.device_get(leaf), sharding), tree)


def _batch_spec(leaf: Any, k: int) -> PartitionSpec:
  ndim = np.ndim(leaf)
  if ndim == 0 or np.shape(leaf)[0] % k:
    return PartitionSpec()  # a scalar, or a batch that does not split (a last partial one)
  return PartitionSpec(AXIS, *([None] * (ndim - 1)))


def process_rows(mesh: Optional[jax.sharding.Mesh], size: int) -> Optional[slice]:
  """The rows of a batch of ``size`` that this process's devices hold under ``mesh``.

  ``None`` means every row: without a mesh, in a single process, when ``size`` does not
  split over the mesh (the batch is then replicated), or when this process's rows are not
  one contiguous block.
  """
  if mesh is None or jax.process_count() == 1 or size % mesh.shape[AXIS]:
    return None
  index = NamedSharding(mesh, PartitionSpec(AXIS)).addressable_devices_indices_map((size,))
  spans = sorted({idx[0].indices(size)[:2] for idx in index.values()})
  start, stop = spans[0][0], spans[-1][1]
  if sum(b - a for a, b in spans) != stop - start:
    return None
  return slice(start, stop)


def shard_rows(batch: Any, mesh: Optional[jax.sharding.Mesh], size: int,
               rows: Optional[slice]) -> Any:
  """A global batch of ``size`` rows from this process's ``rows`` of it (``batch`` holds
  only those rows; ``rows`` from :func:`process_rows`, ``None``: ``batch`` is whole).
  Scalars are the same on every process and replicated."""
  if rows is None:
    return shard_batch(batch, mesh)

  def place(leaf):
    leaf = np.asarray(leaf)
    if leaf.ndim == 0:
      return _place(leaf, NamedSharding(mesh, PartitionSpec()))
    if leaf.shape[0] != rows.stop - rows.start:
      raise ValueError(f"shard_rows: a batch array has {leaf.shape[0]} rows where this "
                       f"process holds rows {rows.start}:{rows.stop} of {size}.")
    sharding = NamedSharding(mesh, PartitionSpec(AXIS, *([None] * (leaf.ndim - 1))))
    return jax.make_array_from_process_local_data(sharding, leaf, (size, *leaf.shape[1:]))

  return jax.tree_util.tree_map(place, batch)


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
    if jax.process_count() == 1:
      return jax.device_put(leaf, sharding)
    return _place(leaf, sharding)

  return jax.tree_util.tree_map(place, batch)


@dataclasses.dataclass(frozen=True)
class Placement:
  """Where the training loop's arrays live and which process speaks for the run: the one
  object the loop asks (:mod:`lvf_jax.train.loop`), over the functions above.

  Attributes:
    mesh: the data-parallel mesh (axis :data:`AXIS`), or None for one device.
    rows: the rows of each host-built training batch this process reads
      (:func:`process_rows`); None: every row.
  """

  mesh: Optional[jax.sharding.Mesh] = None
  rows: Optional[slice] = None

  @classmethod
  def of(cls, config) -> "Placement":
    """The placement of ``config``: builds ``train.mesh`` and checks the batch divides over
    it (after :func:`initialize` has started a multi-process runtime)."""
    batch = int(config.train.batch_size)
    mesh = make_mesh(config.train.get("mesh", ""), batch)
    check_batch_sizes(mesh, batch_size=batch)
    return cls(mesh)

  def reading(self, size: int, host_fed: bool) -> "Placement":
    """This placement with the rows of a ``size``-row batch built on the host (``host_fed``)
    that this process reads."""
    return dataclasses.replace(self, rows=process_rows(self.mesh, size) if host_fed else None)

  def context(self):
    """The mesh's context (``jax.set_mesh``), or none for one device."""
    return contextlib.nullcontext() if self.mesh is None else jax.set_mesh(self.mesh)

  @property
  def devices(self) -> int:
    """Data-parallel devices (1 without a mesh)."""
    return 1 if self.mesh is None else int(self.mesh.shape[AXIS])

  @property
  def writer(self) -> bool:
    """Whether this process writes the run's files."""
    return is_writer()

  def shard(self, batch: Any) -> Any:
    """``batch`` split over the devices along its first axis (:func:`shard_batch`)."""
    return shard_batch(batch, self.mesh)

  def replicate(self, tree: Any) -> Any:
    """``tree`` on every device (:func:`replicate`)."""
    return replicate(tree, self.mesh)

  def host_batch(self, batch: Any, size: int) -> Any:
    """The global batch of ``size`` rows from this process's :attr:`rows` of it."""
    return shard_rows(batch, self.mesh, size, self.rows)

  @staticmethod
  def agree(flag: bool) -> bool:
    """``flag`` as process 0 sees it, on every process (:func:`agree`)."""
    return agree(flag)

  @staticmethod
  def any_process(flag: bool) -> bool:
    """Whether ``flag`` holds on any process (:func:`any_process`)."""
    return any_process(flag)
