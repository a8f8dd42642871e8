"""One uniform way to collect regularisation terms from any model.

Cells add their (already weighted) regularisation terms to the ``'losses'`` collection with
:func:`sow_loss` when their parameters are prepared (once per layer call):

* :class:`~lvf_jax.cells.LVFRNNCell`: ``'div_penalty'`` = ``lambda ||div V||^2`` (lvfRNN
  Sec. 4.3);
* :class:`~lvf_jax.cells.NNRNNCell`: ``'gamma_penalty'`` = ``delta sum_i (gamma_i - 1)^2``
  and ``'t_decay'`` = ``t_decay ||T||_F^2`` (nnRNN Sec. 4);
* :class:`~lvf_jax.cells.SoftOrthogonalRNNCell`: ``'orthogonality_penalty'`` =
  ``lambda ||W^T W - I||_F^2`` (Vorontsov et al. 2017);
* :class:`~lvf_jax.cells.KRUCell`: ``'unitary_penalty'`` = ``lambda sum_f ||W_f^H W_f -
  I||_F^2`` (Jose et al. 2018).

A term is only sown when its weight is positive. The collection must be marked mutable for
the terms to be recorded::

    y, state = model.apply(variables, x, mutable=['losses'])
    loss = task_loss(y) + regularization_loss(state)

Under ``flax.nnx`` (a linen layer wrapped with ``flax.nnx.bridge.ToNNX``) the collection is
likewise only recorded when the call marks it mutable; the terms then live in the module
and :func:`regularization_loss` reads them from it, inside the differentiated function::

    def loss_fn(model):
      y = model(x, mutable=['losses'])
      return task_loss(y) + regularization_loss(model)
    grads = nnx.grad(loss_fn)(model)

Each term *overwrites* the previous value of the same name (it depends on the parameters
only), so calling a layer several times in one forward pass (e.g. truncated BPTT chunks)
counts it once. Inside :class:`flax.linen.RNN` (which scans the cell with
:func:`flax.linen.scan`) the collection is not threaded through the loop: use
:class:`lvf_jax.layers.Recurrent` when you need the terms.
"""

from __future__ import annotations

import sys
from typing import Any

import jax
import jax.numpy as jnp
from flax import linen as nn

COLLECTION = "losses"


def _overwrite(prev, new):
  del prev
  return new


def _zero():
  return 0.0


def sow_loss(module: nn.Module, name: str, value: Any) -> bool:
  """Records the scalar ``value`` as regularisation term ``name`` of ``module``.

  Returns ``True`` if the ``'losses'`` collection is mutable (the value was recorded).
  """
  return module.sow(COLLECTION, name, value, reduce_fn=_overwrite, init_fn=_zero)


def _nnx_losses(module: Any) -> Any:
  """The ``'losses'`` collection of a ``flax.nnx`` module as a nested dict (None when
  ``module`` is not one)."""
  nnx = sys.modules.get("flax.nnx")  # a module of that kind exists only once nnx is imported
  if nnx is None or not isinstance(module, nnx.Module):
    return None
  kind = nnx.variable_type_from_name(COLLECTION, allow_register=True)
  return nnx.to_pure_dict(nnx.state(module, kind))


def regularization_terms(variables: Any) -> dict[str, Any]:
  """Flat ``{'path/to/cell/name': value}`` of every sown term.

  Args:
    variables: the mutated state returned by ``apply(..., mutable=['losses'])`` (or a
      dict holding a ``'losses'`` entry), the ``'losses'`` collection itself, or a
      ``flax.nnx`` module (e.g. ``nnx.bridge.ToNNX``) called with ``mutable=['losses']``.
  """
  losses = _nnx_losses(variables)
  if losses is None:
    losses = variables.get(COLLECTION, variables) if hasattr(variables, "get") else variables
  flat = jax.tree_util.tree_flatten_with_path(losses)[0]
  out = {}
  for path, leaf in flat:
    key = "/".join(str(getattr(p, "key", getattr(p, "idx", p))) for p in path)
    out[key] = leaf
  return out


def regularization_loss(variables: Any, dtype: Any = jnp.float32) -> jax.Array:
  """Sum of every regularisation term sown into ``'losses'`` (0 if none).

  Differentiable w.r.t. the parameters when computed inside the function being
  differentiated (the terms are functions of the parameters).
  """
  total = jnp.zeros((), dtype)
  for leaf in regularization_terms(variables).values():
    total = total + jnp.sum(jnp.asarray(leaf)).astype(dtype)
  return total


# Short alias matching the wording of the design notes.
collect_regularizers = regularization_terms


__all__ = ["COLLECTION", "regularization_loss", "regularization_terms", "sow_loss"]
