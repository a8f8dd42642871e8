"""Sequence layers: the scan layer, stacks, and regularisation collection."""

from lvf_jax.layers.recurrent import (
    IN_LOOP_RATIO,
    INPUT_PROJECTIONS,
    Recurrent,
    is_structured,
    length_mask,
    masked_update,
    scan_steps,
)
from lvf_jax.layers.regularization import (
    COLLECTION,
    collect_regularizers,
    regularization_loss,
    regularization_terms,
    sow_loss,
)

__all__ = [n for n in dir() if not n.startswith("_")]
