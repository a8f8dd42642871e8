"""lvf_jax: latent vector field RNNs and their orthogonal relatives in JAX/Flax.

The subpackages load on first access (``lvf_jax.cells``, ``lvf_jax.train``, ...), so
``import lvf_jax`` imports neither Flax nor TFDS nor matplotlib, and it never changes global
JAX configuration.
"""

import importlib
from typing import Any

__version__ = "0.1.0"

_SUBMODULES = ("geometry", "recurrences", "regularization", "cells", "layers", "models",
               "optim", "diagnostics", "tasks", "data", "train", "zoo")

__all__ = [*_SUBMODULES, "__version__"]


def __getattr__(name: str) -> Any:
  if name in _SUBMODULES:
    return importlib.import_module(f"lvf_jax.{name}")
  raise AttributeError(f"module 'lvf_jax' has no attribute {name!r}")


def __dir__() -> list[str]:
  return sorted(__all__)
