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
from lvf_jax.regularization import (
    COLLECTION,
    collect_regularizers,
    regularization_loss,
    regularization_terms,
    sow_loss,
)

__all__ = [
    "COLLECTION", "INPUT_PROJECTIONS", "IN_LOOP_RATIO", "Recurrent", "collect_regularizers",
    "is_structured", "length_mask", "masked_update", "regularization_loss",
    "regularization_terms", "scan_steps", "sow_loss",
]
