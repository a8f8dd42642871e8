"""Diagnostics of recurrent dynamics: pure functions of matrices (plots, when they come,
take and return matplotlib objects and never change global state).

* :mod:`lvf_jax.diagnostics.memory` -- the Fisher memory curve of linear dynamics (Ganguli,
  Huh and Sompolinsky 2008; nnRNN, Kerg et al. 2019, arXiv:1905.12080, Sec. 3.2 and SM B)
  and the nnRNN paper's family of lower-triangular Schur forms.
"""

from lvf_jax.diagnostics.memory import (
    fisher_memory_curve,
    fisher_memory_total,
    noise_covariance,
    schur_chain,
)

__all__ = ["fisher_memory_curve", "fisher_memory_total", "noise_covariance", "schur_chain"]
