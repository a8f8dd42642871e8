"""Table cells that are computed, not trained: functions ``(**analytic_args) -> metrics``.

A row with ``Row.analytic = '<name>'`` is "run" by calling ``<name>(**row.analytic_args)``
here; the harness stores the returned ``{metric: value}`` as the row's result.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from lvf_jax import diagnostics


def fmc_total(alpha: float, beta: float, d: float, n: int = 100) -> dict[str, float]:
  """nnRNN Table 6: ``J_tot = sum_k J(k)`` of :func:`lvf_jax.diagnostics.schur_chain`
  ``(n, alpha, beta, d)`` with the source ``e_1`` and unit noise on every unit (SM B eq. 7),
  in float64, with the condition number of the noise covariance ``C`` that ``J`` inverts
  (float64 resolves ``J`` only while it stays well below ``1e16``)."""
  with jax.enable_x64(True):
    theta = diagnostics.schur_chain(n, alpha, beta, d, dtype=jnp.float64)
    total = float(diagnostics.fisher_memory_total(theta))
    cond = float(np.linalg.cond(np.asarray(diagnostics.noise_covariance(theta, "all"))))
  return {"fmc_total": total, "condition_number": cond}
