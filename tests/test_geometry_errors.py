"""Bad input raises ValueError naming the function, the argument and the offending value."""

import jax.numpy as jnp
import pytest

from lvf_jax import geometry as g

SQ = jnp.zeros((4, 4))
RECT = jnp.zeros((3, 4))


@pytest.mark.parametrize("fn,name", [
    (g.expm, "expm"), (g.cayley, "cayley"), (g.directional_derivative, "rotation"),
    (g.divergence, "divergence"), (g.antisymmetrize, "antisymmetrize"),
    (g.skew_from_triu, "skew_from_triu"), (g.cayley_inverse, "cayley_inverse"),
    (g.project_divergence_free, "project_divergence_free"),
    (g.orthogonality_error, "orthogonality_error"),
])
def test_non_square(fn, name):
  with pytest.raises(ValueError, match=rf"{name}: argument '\w+' must be a square matrix.*\(3, 4\)"):
    fn(RECT)


def test_vectors_and_scalars_rejected():
  with pytest.raises(ValueError, match=r"expm: argument 'a'.*got shape \(4,\)"):
    g.expm(jnp.zeros(4))
  with pytest.raises(ValueError, match=r"grad: argument 'h'"):
    g.grad(jnp.float32(1.0))


@pytest.mark.parametrize("rho", [-1, 5, 2.0, True])
def test_rho_out_of_range(rho):
  with pytest.raises(ValueError, match=r"scaled_cayley: argument 'rho'.*n=4"):
    g.scaled_cayley(SQ, rho)


@pytest.mark.parametrize("fn", ["euler", "midpoint", "exponential"])
@pytest.mark.parametrize("tau", [0.0, -0.1, float("nan")])
def test_tau_must_be_positive(fn, tau):
  with pytest.raises(ValueError, match=rf"{fn}: argument 'tau' must be a finite number > 0; got"):
    getattr(g, fn)(SQ, tau)


def test_other_bad_arguments():
  with pytest.raises(ValueError, match=r"antisymmetric_diffusion: argument 'gamma' must be .*>= 0"):
    g.antisymmetric_diffusion(SQ, -1.0)
  with pytest.raises(ValueError, match=r"neumann_inverse_update: argument 'order' must be one of \(1, 2, 3\); got 4"):
    g.neumann_inverse_update(SQ, SQ, 4)
  with pytest.raises(ValueError, match=r"neumann_product: arguments 'inv_prev' and 'delta' must have the same shape"):
    g.neumann_inverse_update(SQ, jnp.zeros((5, 5)), 2)
  with pytest.raises(ValueError, match=r"neumann_inverse_step: argument 'threshold'"):
    g.neumann_inverse_step(SQ, SQ, SQ, threshold=1.5)
  with pytest.raises(ValueError, match=r"schur_form: the hidden size n must be even"):
    g.schur_form(jnp.eye(3), jnp.ones(1), jnp.ones(1), jnp.zeros((3, 3)))
  with pytest.raises(ValueError, match=r"schur_form: argument 'gamma' must have shape"):
    g.schur_form(SQ, jnp.ones(3), jnp.ones(3), SQ)
  with pytest.raises(ValueError, match=r"skew_from_packed: argument 'v'.*n\(n-1\)/2 = 6"):
    g.skew_from_packed(jnp.zeros(5), 4)
  with pytest.raises(ValueError, match=r"henaff: argument 'shape' must be square"):
    g.henaff()(None, (3, 4))
  with pytest.raises(ValueError, match=r"haar_orthogonal: argument 'dtype' must be a floating dtype"):
    g.haar_orthogonal()(None, (3, 3), jnp.int32)
  with pytest.raises(ValueError, match=r"doubly_stochastic: needs n >= 2"):
    g.doubly_stochastic()(None, (1, 1))
  with pytest.raises(ValueError, match=r"rotation_blocks: arguments 'gamma' and 'theta' must have the same shape"):
    g.rotation_blocks(jnp.ones(2), jnp.ones(3))
