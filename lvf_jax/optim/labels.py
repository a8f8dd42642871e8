"""Parameter labels for ``optax.partition``, from the lvf_jax naming convention.

Every lvf_jax model names its structured parameters (see ``docs/ARCHITECTURE.md``):

* ``orthogonal`` / ``orthogonal_<suffix>``: an orthogonal matrix stored directly (column
  form), trained by a Riemannian transform -> label ``'orthogonal'``;
* ``unitary`` / ``unitary_<suffix>``: a complex unitary matrix stored directly as the real
  pair ``[Re W, Im W]`` ``(2, n, n)`` (the full-capacity uRNN), trained by the complex
  multiplicative Cayley step -> label ``'unitary'``;
* ``skew`` / ``skew_<suffix>``: a trivialised generator mapped by expm / Cayley every
  forward pass, trained by a Euclidean optimiser (expRNN uses ``lr / 10``) -> ``'skew'``;
* ``vector_field_divergence``: the divergence parameter of an lvfRNN field parametrised by its
  divergence-free part and its divergence (``separate_divergence``) -> ``'divergence'``;
* ``vector_field`` / ``vector_field_<suffix>`` (any other suffix): an lvfRNN vector field ->
  ``'vector_field'``;
* anything else -> ``'default'``.

The label is decided by the innermost dictionary key of a leaf's path (so metadata boxes
such as ``nn.Partitioned`` are looked through).
"""

from __future__ import annotations

from typing import Any, Optional

import jax

ORTHOGONAL = "orthogonal"
UNITARY = "unitary"
SKEW = "skew"
VECTOR_FIELD = "vector_field"
DIVERGENCE = "divergence"
DEFAULT = "default"
LABELS = (ORTHOGONAL, UNITARY, SKEW, VECTOR_FIELD, DIVERGENCE, DEFAULT)

#: The parameter name of the divergence of a separately parametrised lvfRNN field.
DIVERGENCE_PARAM = "vector_field_divergence"

_PREFIXES = (ORTHOGONAL, UNITARY, SKEW, VECTOR_FIELD)


def label_for_name(name: Any) -> str:
  """The label of a parameter called ``name`` (``'orthogonal_c'`` -> ``'orthogonal'``)."""
  if name == DIVERGENCE_PARAM:
    return DIVERGENCE
  if isinstance(name, str):
    for prefix in _PREFIXES:
      if name == prefix or name.startswith(prefix + "_"):
        return prefix
  return DEFAULT


def _leaf_name(path) -> Optional[Any]:
  for key in reversed(tuple(path)):
    if isinstance(key, jax.tree_util.DictKey):
      return key.key
  for key in reversed(tuple(path)):
    if isinstance(key, jax.tree_util.GetAttrKey):
      return key.name
  return None


def param_labels(params: Any) -> Any:
  """Tree of labels (``'orthogonal' | 'unitary' | 'skew' | 'vector_field' | 'divergence' |
  'default'``).

  Usable directly as ``optax.partition(transforms, param_labels)``::

    tx = optax.partition({'orthogonal': lvf_jax.optim.scornn(optax.rmsprop(1e-4), rho=4),
                          'unitary': lvf_jax.optim.multiplicative_cayley(1e-4, unitary=True),
                          'skew': optax.rmsprop(1e-4), 'vector_field': optax.adam(1e-3),
                          'divergence': optax.adam(1e-6), 'default': optax.adam(1e-3)},
                         lvf_jax.optim.param_labels)
  """
  return jax.tree_util.tree_map_with_path(lambda p, _: label_for_name(_leaf_name(p)), params)
