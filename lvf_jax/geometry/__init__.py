"""The geometric core of lvf_jax: pure, jit/vmap/grad-safe JAX functions (no Flax).

Generators (``G``, column convention ``G @ h``) and maps (``G -> transition``) combine
freely; see ``docs/ARCHITECTURE.md``.
"""

from lvf_jax.geometry.activations import modrelu, modrelu_split
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
)
from lvf_jax.geometry.initializers import (
    cayley_init,
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
    eunn_fft_matrix,
    eunn_layer,
    eunn_matrix,
    fft_pairs,
    givens_pairs,
    pair_from_complex,
    phase,
    qr_positive,
    reflect,
    urnn_matrix,
)

__all__ = [n for n in dir() if not n.startswith("_")]
