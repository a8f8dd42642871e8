"""optax transformations for structured (orthogonal, skew, vector-field) parameters.

Two ways to train an orthogonal recurrent matrix (see ``docs/ARCHITECTURE.md``):

* trivialisation -- the parameter is an unconstrained ``skew`` mapped by expm / Cayley in
  the cell; any Euclidean optimiser works, plus :func:`dynamic_trivialization` (dtriv);
* Riemannian -- the parameter is the ``orthogonal`` matrix itself: :func:`scornn`,
  :func:`neumann_cayley` (NC-GRU Alg. 1), :func:`multiplicative_cayley` (full-capacity
  uRNN; ``unitary=True`` for complex unitary matrices stored as ``[Re W, Im W]``),
  optionally followed by :func:`reorthonormalize`. These return
  ``updates = W_new - W``, need ``params`` and must be last in their chain.

:func:`param_labels` labels any lvf_jax model's parameters for ``optax.partition`` and
:func:`make_optimizer` builds the papers' set-ups from a config.
"""

import types as _types

from lvf_jax.optim._common import orthonormalize
from lvf_jax.optim.cayley import NeumannCayleyState, ScoRNNState, neumann_cayley, scornn
from lvf_jax.optim.factory import DEFAULTS, default_config, make_optimizer
from lvf_jax.optim.labels import (
    DEFAULT,
    DIVERGENCE,
    LABELS,
    ORTHOGONAL,
    SKEW,
    UNITARY,
    VECTOR_FIELD,
    label_for_name,
    param_labels,
)
from lvf_jax.optim.multiplicative import (
    MultiplicativeCayleyState,
    ReorthonormalizeState,
    multiplicative_cayley,
    reorthonormalize,
)
from lvf_jax.optim.trivialization import (
    DTRIV_COLLECTION,
    dtriv_rebase,
    dynamic_trivialization,
    expm_triu,
)

__all__ = [
    "DEFAULT", "DEFAULTS", "DIVERGENCE", "DTRIV_COLLECTION", "LABELS", "MultiplicativeCayleyState",
    "NeumannCayleyState", "ORTHOGONAL", "ReorthonormalizeState", "SKEW", "ScoRNNState",
    "UNITARY", "VECTOR_FIELD", "default_config", "dtriv_rebase", "dynamic_trivialization",
    "expm_triu", "label_for_name", "make_optimizer", "multiplicative_cayley", "neumann_cayley",
    "orthonormalize", "param_labels", "reorthonormalize", "scornn",
]
