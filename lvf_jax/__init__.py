"""lvf_jax: latent vector field RNNs and their orthogonal relatives in JAX/Flax.

Importing ``lvf_jax`` never changes global JAX configuration.
"""

from lvf_jax import geometry

__version__ = "0.1.0"

__all__ = ["geometry", "__version__"]
