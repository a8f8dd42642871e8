"""Diagnostics of recurrent dynamics: pure functions first, plots second (the plots take and
return matplotlib axes and never change global state).

* :mod:`lvf_jax.diagnostics.spectra` -- the transition matrices of any cell (column form),
  their eigenvalues, singular values, spectral radius, distances from orthogonality and
  normality; the lvfRNN's divergence and rotation / flux split (Azencot et al. 2021,
  arXiv:2102.09589, eqs. 9-10); the cheap per-layer figures the training loop logs.
* :mod:`lvf_jax.diagnostics.gradient_flow` -- ``||dL/dh_t||`` and ``||dh_T/dh_t||`` over
  time, PCA of hidden-state trajectories.
* :mod:`lvf_jax.diagnostics.memory` -- the Fisher memory curve of linear dynamics (Ganguli,
  Huh and Sompolinsky 2008; nnRNN, Kerg et al. 2019, arXiv:1905.12080, Sec. 3.2 and SM B)
  and the nnRNN paper's family of lower-triangular Schur forms.
* :mod:`lvf_jax.diagnostics.probes` -- held-out linear read-out probes of hidden states and the
  linear memory curve of a driven network (Jaeger 2002).
* :mod:`lvf_jax.diagnostics.plots` -- spectra against the unit circle, gradient flow, PCA.
"""

from lvf_jax.diagnostics.gradient_flow import (
    hidden_pca,
    loss_gradient_norms,
    loss_gradients,
    perturbed_states,
    state_jacobian_norms,
)
from lvf_jax.diagnostics.memory import (
    fisher_memory_curve,
    fisher_memory_total,
    noise_covariance,
    schur_chain,
)
from lvf_jax.diagnostics.plots import plot_gradient_flow, plot_pca, plot_spectrum
from lvf_jax.diagnostics.probes import linear_memory_curve, linear_probe_r2
from lvf_jax.diagnostics.spectra import (
    eigenvalues,
    model_diagnostics,
    normality_error,
    orthogonality_error,
    schur_factors,
    singular_values,
    spectral_radius,
    spectrum,
    transition_matrices,
    vector_field_summary,
)

__all__ = [
    "eigenvalues", "fisher_memory_curve", "fisher_memory_total", "hidden_pca",
    "linear_memory_curve", "linear_probe_r2", "loss_gradient_norms", "loss_gradients",
    "model_diagnostics", "noise_covariance", "normality_error", "orthogonality_error",
    "perturbed_states", "plot_gradient_flow", "plot_pca", "plot_spectrum", "schur_chain",
    "schur_factors", "singular_values", "spectral_radius", "spectrum", "state_jacobian_norms",
    "transition_matrices", "vector_field_summary",
]
