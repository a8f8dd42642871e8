"""The geometric core of lvf_jax: pure, jit/vmap/grad-safe JAX functions (no Flax).

Generators (``G``, column convention ``G @ h``) and maps (``G -> transition``) combine
freely; see ``docs/ARCHITECTURE.md``.
"""

from lvf_jax.geometry.activations import modrelu, modrelu_split
from lvf_jax.geometry.factored import (
    gram_penalty,
    kronecker_apply,
    kronecker_blocks,
    kronecker_matrix,
    kronecker_sizes,
    margin_matrix,
    spectral_margin,
)
from lvf_jax.geometry.generators import (
    antisymmetric_diffusion,
    antisymmetrize,
    directional_derivative,
    div,
    divergence,
    flux,
    grad,
    num_skew_params,
    packed_from_skew,
    project_divergence_free,
    rotation,
    rotation_blocks,
    schur_form,
    skew_from_packed,
    skew_from_triu,
    with_divergence,
)
from lvf_jax.geometry.initializers import (
    cayley_init,
    centered_over_units,
    doubly_stochastic,
    haar_orthogonal,
    haar_skew,
    haar_unitary,
    henaff,
    modrelu_bias,
    orthogonal_log,
    scaled_normal,
    sinkhorn,
    uniform_angle,
    urnn_unitary,
)
from lvf_jax.geometry.maps import (
    EXPM_METHODS,
    INTEGRATORS,
    cayley,
    euler,
    exponential,
    expm,
    expm_taylor,
    get_integrator,
    inverse_scaled_cayley,
    midpoint,
    orthogonality_error,
    scaled_cayley,
    scaling_diagonal,
)
from lvf_jax.geometry.neumann import (
    NEUMANN_ORDERS,
    NeumannStep,
    cayley_inverse,
    neumann_inverse_step,
    neumann_inverse_update,
    neumann_product,
)
from lvf_jax.geometry.unitary import (
    complex_dtype,
    complex_from_pair,
    complex_to_real_kernel,
    EUNNRotations,
    eunn_apply,
    eunn_fft_matrix,
    eunn_layer,
    eunn_matrix,
    eunn_rotations,
    fft_pairs,
    givens_pairs,
    pair_from_complex,
    phase,
    qr_positive,
    reflect,
    URNNFactors,
    urnn_apply,
    urnn_factors,
    urnn_factors_matrix,
    urnn_matrix,
)

__all__ = [
    "EXPM_METHODS", "INTEGRATORS", "NEUMANN_ORDERS", "NeumannStep", "antisymmetric_diffusion",
    "antisymmetrize", "cayley", "cayley_init", "cayley_inverse", "centered_over_units",
    "complex_dtype", "complex_from_pair", "complex_to_real_kernel", "directional_derivative", "div",
    "divergence", "doubly_stochastic", "euler", "EUNNRotations", "eunn_apply", "eunn_fft_matrix",
    "eunn_layer", "eunn_matrix", "eunn_rotations",
    "expm", "expm_taylor", "exponential", "fft_pairs", "flux", "get_integrator", "givens_pairs",
    "grad", "gram_penalty", "haar_orthogonal", "haar_skew", "haar_unitary", "henaff",
    "inverse_scaled_cayley", "kronecker_apply", "kronecker_blocks", "kronecker_matrix",
    "kronecker_sizes", "margin_matrix",
    "midpoint", "modrelu", "modrelu_bias", "modrelu_split", "neumann_inverse_step",
    "neumann_inverse_update", "neumann_product", "num_skew_params", "orthogonal_log",
    "orthogonality_error", "packed_from_skew", "pair_from_complex", "phase",
    "project_divergence_free", "qr_positive", "reflect", "rotation", "rotation_blocks",
    "scaled_cayley", "scaled_normal", "scaling_diagonal", "schur_form", "sinkhorn",
    "skew_from_packed", "skew_from_triu", "spectral_margin", "uniform_angle", "URNNFactors",
    "urnn_apply",
    "urnn_factors", "urnn_factors_matrix", "urnn_matrix", "urnn_unitary", "with_divergence",
]
