"""The lvfRNN divergence study (experiments/lvf_divergence.py) against the library's maps."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import lvf_divergence as study
from lvf_jax import geometry
import tolerances as tol


def _field(n, seed, scale=0.01):
  rng = np.random.default_rng(seed)
  v = np.asarray(geometry.doubly_stochastic()(jax.random.key(seed), (n, n)), np.float64)
  return v + scale * rng.standard_normal((n, n)) * (1 - np.eye(n))


@pytest.mark.parametrize("integrator", ["midpoint", "euler", "exp"])
def test_spectrum_of_field_is_the_librarys_map(integrator):
  v, tau = _field(12, 0), 3.0
  got = study.spectrum_of_field(v, tau, integrator)
  c = np.asarray(geometry.get_integrator(integrator)(
      geometry.directional_derivative(jnp.asarray(v, jnp.float32)), tau), np.float64)
  # float32 map of a 12 x 12 field of entries below 1 against float64: a matrix function
  assert got["radius"] == pytest.approx(np.abs(np.linalg.eigvals(c)).max(),
                                        rel=tol.F32_LONG["rtol"])
  div = np.asarray(geometry.divergence(jnp.asarray(v, jnp.float32)), np.float64)
  # float32 sums of a column's and a row's 2 n entries, of magnitudes summing to about 2 (a
  # doubly-stochastic field): they cancel to div ~ 0.1, so the bound is absolute
  n = v.shape[0]
  assert got["div_max"] == pytest.approx(np.abs(div).max(), rel=tol.F32_LONG["rtol"],
                                         abs=2 * tol.probabilistic(2 * n))
  assert got["growth"] == pytest.approx(got["radius"] ** study.SEQUENCE)
  if integrator == "midpoint":  # Bendixson: the radius is bounded by the largest divergence
    m = got["div_max"]
    # float64 eigenvalues of a 12 x 12 solve
    assert got["radius"] <= (1 + tau * m / 2) / (1 - tau * m / 2) * (1 + tol.F64_CONDITIONED["rtol"])


def test_a_literal_trial_records_its_first_step_and_the_page_reads_the_records(tmp_path):
  record = study.trial("literal", 0, steps=2, probe_every=1, log=lambda *_: None)
  assert [p["step"] for p in record["probes"]] == [0, 1, 2]
  # Alg. 2: doubly stochastic, div V = 0 up to the float32 rounding of a column's and a row's
  # 2 n entries, each summing to 1 (n = 128, the preset's width)
  n = study.config_for({}, 0, 2).model.hidden
  assert record["probes"][0]["div_max"] < 2 * tol.probabilistic(2 * n)
  assert record["probes"][1]["div_max"] > 1e-4  # one Adam step gives it a divergence
  grid = {(g["tau"], g["lr"]): g for g in record["first_step_grid"]}
  assert len(grid) == 16
  # the grid rescales the recorded step: at the preset's own tau and rate it is step 1
  own = grid[(15.0, 1e-4)]
  # the same float64 field, v0 + (v1 - v0) * 1.0, through the same float64 eigensolver
  assert own["radius"] == pytest.approx(record["probes"][1]["radius"],
                                        rel=tol.F64_CONDITIONED["rtol"])
  assert grid[(15.0, 1e-6)]["radius"] < own["radius"]
  page = tmp_path / "page.md"
  study.write_page({"literal/seed0": record}, str(page))
  text = page.read_text()
  assert "| `literal` | Table 5 as printed | 0 | 2 |" in text
  assert f"{own['radius']:.5f}" in text
  assert "## What decides it" in text


def _variables(cell):
  return {"params": {"rnn": {"layer_0": {"cell": cell}}, "head": {"kernel": jnp.ones((3, 2))}}}


def test_scaling_the_divergence_keeps_the_divergence_free_part_and_nothing_else():
  v = jnp.asarray(_field(10, 1, scale=0.05), jnp.float32)
  assert float(jnp.abs(geometry.divergence(v)).max()) > 1e-3  # the test field has one
  cfg = {"divergence_free": False}
  changed = study.with_divergence_scaled(
      _variables({"vector_field": v, "bias": jnp.ones(10)}), cfg, 0.0)
  w = changed["params"]["rnn"]["layer_0"]["cell"]["vector_field"]
  # float32 sums of 2 x 10 entries
  assert float(jnp.abs(geometry.divergence(w)).max()) < tol.F32["atol"]
  # the divergence-free part is kept: projecting again changes nothing (float32, 2 n terms)
  np.testing.assert_allclose(geometry.project_divergence_free(w), w, atol=tol.F32["atol"])
  np.testing.assert_array_equal(changed["params"]["head"]["kernel"], jnp.ones((3, 2)))
  # a factor s scales the divergence by s and keeps the divergence-free part
  half = study.with_divergence_scaled(_variables({"vector_field": v}), cfg, 0.5)
  h = half["params"]["rnn"]["layer_0"]["cell"]["vector_field"]
  np.testing.assert_allclose(geometry.divergence(h), 0.5 * geometry.divergence(v),
                             atol=tol.F32["atol"])
  np.testing.assert_allclose(geometry.project_divergence_free(h), w, atol=tol.F32["atol"])
  np.testing.assert_array_equal(changed["params"]["rnn"]["layer_0"]["cell"]["bias"],
                                jnp.ones(10))
  # the separate parametrisation: its divergence parameter is zeroed, V left as it is
  sep = study.with_divergence_scaled(_variables(
      {"vector_field": v, "vector_field_divergence": jnp.ones(10)}), cfg, 0.0)
  cell = sep["params"]["rnn"]["layer_0"]["cell"]
  np.testing.assert_array_equal(cell["vector_field_divergence"], jnp.zeros(10))
  np.testing.assert_array_equal(cell["vector_field"], v)
  # under the hard constraint there is no divergence to remove
  assert study.with_divergence_scaled(_variables({"vector_field": v}),
                                      {"divergence_free": True}, 0.0) is None


def test_a_comparison_section_averages_the_recorded_seeds_and_says_not_run(tmp_path,
                                                                           monkeypatch):
  monkeypatch.setattr(study, "PAGES", str(tmp_path))
  seeds = {str(k): {"metrics": {"test_bpc": bpc, **({"x": 1.0} if k else {})}, "steps": 40}
           for k, bpc in enumerate((1.5, 2.1))}
  study.archive.save(study.archive.path_for(str(tmp_path), "lvf-t1"),
                     {"table": "lvf-t1", "rows": {"ptb-rnn-cpu": {"seeds": seeds}}})
  metrics = (("test_bpc", "test BPC"), ("x", "other"))
  lines = study.comparison_lines("Title", "intro", "lvf-t1",
                                 (("ptb-rnn-cpu", "first"), ("ptb-lvf-cpu", "second")),
                                 metrics, "test_bpc")
  assert lines[:3] == ["## Title", "", "intro"]
  assert "| row | setting | seeds | test BPC | other | paper | steps |" in lines
  # Table 1 of the lvfRNN paper: RNN 1.65, lvfRNN 1.43 BPC
  assert "| ptb-rnn-cpu | first | 2 | 1.800 | 1.000 (1 of 2 seeds) | 1.65 | 40, 40 |" in lines
  assert "| ptb-lvf-cpu | second | 0 | not run | not run | 1.43 | — |" in lines
  gaps = study.gap_lines("lvf-t1", ("ptb-rnn-cpu", "ptb-lvf-cpu"), "test_bpc")
  assert gaps[0] == "Recorded `test_bpc` minus the paper's value: ptb-rnn-cpu +0.150."
  monkeypatch.setattr(study, "PAGES", str(tmp_path / "none"))
  assert study.comparison_lines("Title", "intro", "lvf-t1", (("ptb-rnn-cpu", "first"),),
                                metrics, "test_bpc") == []
  assert study.gap_lines("lvf-t1", ("ptb-rnn-cpu",), "test_bpc") == []


def test_the_committed_page_is_the_page_of_its_records(tmp_path):
  """docs/LVF_DIVERGENCE.md is what its records (and the harness archives it reads) give."""
  figure = tmp_path / "figures" / "lvf_copy_spectrum.png"
  figure.parent.mkdir()
  page = study.write_page(study.load_records(), str(tmp_path / "LVF_DIVERGENCE.md"),
                          str(figure))
  with open(study.PAGE) as f:
    assert f.read() == open(page).read()


@pytest.mark.parametrize("row_settings,metric,gap", [
    (study.JSB_ROWS, "test_loss", True), (study.MUSE_ROWS, "test_nll_per_sequence", True),
    (study.PTB_ROWS, "test_bpc", False)])
def test_each_comparison_reads_the_metric_its_rows_verdicts_read(row_settings, metric, gap):
  """The paper column and the distance to the paper (PTB-char has none) use the metric the
  harness judges the row by (MuseData: the per-piece mean), so neither is left empty."""
  from experiments.reproduce import rows  # pylint: disable=g-import-not-at-top
  table = rows.get("lvf-t3" if metric != "test_bpc" else "lvf-t1")
  for row, _ in row_settings:
    assert metric in table.row(row).paper, row
  with open(study.PAGE) as f:
    page = f.read()
  assert (f"Recorded `{metric}` minus the paper's value:" in page) == gap
