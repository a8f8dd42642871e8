"""Validation and small array helpers shared by the :mod:`lvf_jax.optim` transforms.

Hyperparameters may be Python numbers (checked eagerly, at construction or ``init``) or
JAX arrays -- e.g. the tracers that :func:`optax.inject_hyperparams` passes to ``update``
under ``jit`` -- which cannot be inspected and are used as they are.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from lvf_jax import _validation
from lvf_jax import geometry, recurrences

Array = jax.Array

ORTHONORMALIZE_METHODS = ("polar", "qr")


def check_learning_rate(fn: str, learning_rate: Any) -> Any:
  if callable(learning_rate) or not _validation.is_concrete(learning_rate):
    return learning_rate
  v = _validation.concrete_value(learning_rate)
  if v is None or not np.isfinite(v) or v <= 0:
    raise ValueError(
        f"{fn}: argument 'learning_rate' must be a finite number > 0 or a schedule; "
        f"got {learning_rate!r}.")
  return learning_rate



def check_transformation(fn: str, name: str, tx: Any) -> optax.GradientTransformationExtraArgs:
  if not isinstance(tx, optax.GradientTransformation):
    raise ValueError(
        f"{fn}: argument '{name}' must be an optax.GradientTransformation (e.g. "
        f"optax.rmsprop(1e-4)); got {type(tx).__name__}.")
  return optax.with_extra_args_support(tx)


def require_params(fn: str, params: Any) -> None:
  if params is None:
    raise ValueError(
        f"{fn}: update() requires 'params' (the current orthogonal matrices W): it returns "
        f"updates = W_new - W and must be the last transform of its chain; call "
        f"tx.update(grads, state, params).")


def _path_name(path) -> str:
  return jax.tree_util.keystr(tuple(path)) or "<root>"


def check_square_leaves(fn: str, tree: Any, name: str = "params", *,
                        unitary: bool = False) -> list[Array]:
  """Leaves of ``tree`` (``optax.MaskedNode`` holes skipped); each ``(..., n, n)`` float
  (``unitary``: ``(..., 2, n, n)``, the pairs ``[Re W, Im W]`` of unitary matrices)."""
  leaves_with_path = jax.tree_util.tree_flatten_with_path(tree)[0]
  for path, leaf in leaves_with_path:
    shape = np.shape(leaf)
    if unitary and (len(shape) < 3 or shape[-3] != 2 or shape[-1] != shape[-2]):
      raise ValueError(
          f"{fn}: every leaf of '{name}' must be a pair [Re W, Im W] of shape (..., 2, n, n) "
          f"(a unitary matrix in column form); leaf {_path_name(path)} has shape "
          f"{tuple(shape)}. Use optax.partition (see lvf_jax.optim.param_labels) to pass "
          f"only unitary parameters.")
    if len(shape) < 2 or shape[-1] != shape[-2]:
      raise ValueError(
          f"{fn}: every leaf of '{name}' must be a square matrix (..., n, n) (an orthogonal "
          f"matrix in column form); leaf {_path_name(path)} has shape {tuple(shape)}. Use "
          f"optax.partition (see lvf_jax.optim.param_labels) to pass only orthogonal "
          f"parameters.")
    dtype = jnp.result_type(leaf)
    if not jnp.issubdtype(dtype, jnp.floating):
      raise ValueError(
          f"{fn}: leaf {_path_name(path)} of '{name}' must have a floating dtype; got {dtype}.")
  return [leaf for _, leaf in leaves_with_path]


def check_orthogonal_leaves(fn: str, tree: Any, name: str = "params", *,
                            unitary: bool = False) -> None:
  """Raises ``ValueError`` if a concrete leaf of ``tree`` is not an orthogonal matrix
  (``unitary``: a unitary pair ``[Re W, Im W]``) to its dtype's precision: the Riemannian
  updates keep a matrix on the manifold only if it starts there. Traced leaves (inside
  ``jit`` or ``eval_shape``) are not checked."""
  for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
    if not _validation.is_concrete(leaf) or isinstance(leaf, optax.MaskedNode):
      continue
    w = np.asarray(leaf, dtype=np.float64)
    if unitary:
      w = w[..., 0, :, :] + 1j * w[..., 1, :, :]
    n = w.shape[-1]
    gram = np.swapaxes(w, -1, -2).conj() @ w
    error = float(np.max(np.abs(gram - np.eye(n)))) if w.size else 0.0
    tol = 1000 * float(jnp.finfo(jnp.result_type(leaf)).eps) * max(1.0, np.sqrt(n))
    if not error <= tol:
      kind = "unitary" if unitary else "orthogonal"
      raise ValueError(
          f"{fn}: leaf {_path_name(path)} of '{name}' must be {kind} to start with (its "
          f"updates stay on the manifold only from a point on it); max |W^H W - I| = "
          f"{error:.3g} > {tol:.3g}. Initialise it {kind}: the cells' orthogonal "
          f"initialisers, or lvf_jax.optim.orthonormalize(W), the nearest {kind} matrix.")


def check_same_structure(fn: str, names: tuple[str, str], a: Any, b: Any) -> None:
  sa, sb = jax.tree.structure(a), jax.tree.structure(b)
  if sa != sb:
    raise ValueError(
        f"{fn}: '{names[0]}' and '{names[1]}' must have the same tree structure; got "
        f"{sa} and {sb}.")
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
    if np.shape(x) != np.shape(y):
      raise ValueError(
          f"{fn}: '{names[0]}' and '{names[1]}' leaves must have the same shapes; got "
          f"{np.shape(x)} and {np.shape(y)}.")


def transpose(m: Array) -> Array:
  return jnp.swapaxes(m, -1, -2)


def adjoint(m: Array) -> Array:
  """Conjugate transpose ``M^H`` (``M^T`` for a real ``M``)."""
  return jnp.conj(transpose(m)) if jnp.iscomplexobj(m) else transpose(m)


def scale_columns(m: Array, d: Array) -> Array:
  """``M @ diag(d)`` for ``M`` of shape ``(..., n, n)`` and ``d`` of shape ``(n,)``."""
  return m * jnp.broadcast_to(d, m.shape)


def eye_like(m: Array) -> Array:
  return jnp.broadcast_to(jnp.eye(m.shape[-1], dtype=m.dtype), m.shape)


def skew_part(m: Array) -> Array:
  """``(M - M^T) / 2``; exact (bitwise the identity) on exactly skew ``M``."""
  return 0.5 * (m - transpose(m))


def scaling_diagonal(fn: str, rho: Any, n: int, dtype) -> Array:
  """Diagonal of ``D`` (``n - rho`` ones, then ``rho`` minus ones).

  A concrete ``rho`` is range-checked and built by :func:`lvf_jax.geometry.scaling_diagonal`;
  a traced one (``optax.inject_hyperparams``) is used as it is.
  """
  if _validation.is_concrete(rho):
    v = _validation.concrete_value(rho)
    if isinstance(rho, bool) or v is None or float(v) != int(v) or not 0 <= int(v) <= n:
      raise ValueError(
          f"{fn}: argument 'rho' (number of -1 entries of D) must be an int in "
          f"[0, n={n}]; got rho={rho!r}.")
    return geometry.scaling_diagonal(n, int(v), dtype)
  keep = jnp.arange(n) < n - rho
  return jnp.where(keep, jnp.ones((n,), dtype), -jnp.ones((n,), dtype))


def orthonormalize(w: Array, method: str = "polar") -> Array:
  """Nearest orthogonal (complex ``w``: unitary) matrix (``'polar'``: ``U V^H`` from the
  SVD, the Frobenius-nearest) or the phase-fixed Q factor (``'qr'``: ``R`` with positive
  real diagonal). Batched, dtype-preserving.
  """
  _validation.check_choice("orthonormalize", "method", method, ORTHONORMALIZE_METHODS)
  if np.ndim(w) < 2 or np.shape(w)[-1] != np.shape(w)[-2]:
    raise ValueError(
        f"orthonormalize: argument 'w' must be a square matrix (..., n, n); got shape "
        f"{np.shape(w)}.")
  if method == "polar":
    u, _, vt = jnp.linalg.svd(w, full_matrices=False)
    return u @ vt
  return geometry.qr_positive(w)


def every_k(count: Array, every: Any) -> Array:
  """Whether update number ``count + 1`` (1-based) is a multiple of ``every`` (None/0: never)."""
  if every is None:
    return jnp.asarray(False)
  every = jnp.asarray(every, jnp.int32)
  step = count + 1
  return jnp.logical_and(every > 0, step % jnp.maximum(every, 1) == 0)


#: The explicit (sharding-in-types) ``NamedSharding`` of ``x``, or None when ``x`` is not
#: explicitly sharded (Auto meshes, single device): then XLA propagates shardings.
_typed_sharding = recurrences.typed_sharding


def gather_matrix(x: Array) -> Array:
  """Replicates the two matrix dimensions of an explicitly sharded ``x`` (LU, SVD and the
  products of these updates need whole matrices); leading batch dimensions keep theirs."""
  s = _typed_sharding(x)
  if s is None:
    return x
  spec = tuple(s.spec) + (None,) * (np.ndim(x) - len(s.spec))
  if spec[-2:] == (None, None):
    return x
  new = jax.sharding.NamedSharding(s.mesh, jax.sharding.PartitionSpec(*spec[:-2], None, None))
  return jax.sharding.reshard(x, new)


def shard_like(y: Array, ref: Array) -> Array:
  """``y`` resharded as ``ref`` when ``ref`` is explicitly sharded (so optimiser states made
  by ``init`` and by ``update`` carry the parameters' sharding); otherwise ``y``."""
  s = _typed_sharding(ref)
  if s is None or np.shape(y) != np.shape(ref):
    return y
  return jax.sharding.reshard(y, s)


def shard_state_like(state: Any, params: Any) -> Any:
  """The optimiser state ``state`` (of an inner transformation initialised on ``params``)
  with every array leaf whose tree path ends with a leaf's path of ``params``, and whose shape
  is that leaf's, resharded as that leaf (some optax inits make such leaves replicated under
  explicit sharding, while ``update`` makes them sharded as the gradients)."""
  refs = {jax.tree_util.keystr(tuple(p)): leaf
          for p, leaf in jax.tree_util.tree_flatten_with_path(params)[0]}
  if not any(_typed_sharding(r) is not None for r in refs.values()):
    return state

  def reshard(path, leaf):
    key = jax.tree_util.keystr(tuple(path))
    for ref_key, ref in refs.items():
      if key.endswith(ref_key) and np.shape(leaf) == np.shape(ref):
        return shard_like(leaf, ref)
    return leaf

  return jax.tree_util.tree_map_with_path(reshard, state)


def zero_count(params: Any) -> Array:
  """``int32`` zero for a state's update counter, computed *from* a leaf of ``params`` (a
  reduction, cheap and once): ``jit(init)`` then places the counter on the parameters'
  devices (replicated), as ``jit(update)`` does, instead of on a single device."""
  leaves = jax.tree.leaves(params)
  if not leaves:
    return jnp.zeros([], jnp.int32)
  m = jnp.max(leaves[0])
  return jnp.zeros([], jnp.int32) * (m == m).astype(jnp.int32)
