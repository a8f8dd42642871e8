"""experiments/denoise_metric.py: NC-GRU Table 2's runs, their variants and the page written
from the records alone."""

import pytest

from experiments import denoise_metric as dm
from experiments import parenthesis_metric as pm


def test_a_run_names_a_row_of_table_two_and_a_known_variant():
  assert dm.parse_run("denoise-scornn-t200:rho50") == ("denoise-scornn-t200", "rho50")
  with pytest.raises(ValueError, match="row 'copy-x' is not in ncgru-t2"):
    dm.parse_run("copy-x:preset")
  with pytest.raises(ValueError, match="variant 'rho7' unknown; allowed: \\['preset', 'rho50'\\]"):
    dm.parse_run("denoise-scornn-t200:rho7")
  for spec in dm.RUNS:
    dm.parse_run(spec)


def test_a_variant_changes_only_its_keys():
  base = dm.variant_config("denoise-scornn-t200", "preset")
  changed = dm.variant_config("denoise-scornn-t200", "rho50")
  assert (base.model.cell.rho, changed.model.cell.rho) == (100, 50)
  changed.model.cell.rho = base.model.cell.rho
  assert changed.to_dict() == base.to_dict()


def _run(row, variant, paper, single, ten):
  return {"row": row, "variant": variant, "paper": paper, "steps": 10000,
          "minima": {"1": single, "10": ten, "100": ten * 1.1}, "command": "c", "commit": "abc",
          "machine": "m", "date": "d"}


def test_the_reading_computes_the_share_of_the_gap_from_the_records():
  closes = _run("denoise-goru-t200", "preset", 0.04, 0.042, 0.048)  # (0.048-0.042)/0.008
  reaches = _run("denoise-scornn-t200", "rho50", 0.08, 0.079, 0.085)
  text = "\n".join(dm.reading_lines([closes, reaches], []))
  assert f"closes {100 * (0.048 - 0.042) / (0.048 - 0.04):.0f} % of the gap" in text
  assert "0.079 against the paper's 0.08 (0.988 times), reaches the paper's value" in text
  assert dm.reading_lines([], []) == ["No run is recorded yet."]


def test_the_page_comes_from_the_records(tmp_path, monkeypatch):
  from experiments.reproduce import archive  # pylint: disable=g-import-not-at-top
  path = tmp_path / "ncgru-t2.json"
  archive.save(str(path), {"rows": {"denoise-goru-t200": {"seeds": {
      "0": {"steps": 10000, "metrics": {"min_train_loss": 0.05}}}}}})
  monkeypatch.setattr(dm, "TABLE_RECORDS", str(path))
  page = dm.page([_run("denoise-goru-t200", "preset", 0.04453, 0.0431, 0.0462)])
  assert ("| denoise-goru-t200 | preset | 0.04453 | 0.0431 | 0.0462 | 0.05082 | "
          f"{0.0431 / 0.04453:.3f}, {0.0462 / 0.04453:.3f} | 10000 |") in page
  assert f"| denoise-goru-t200 | 0.04453 | 0.05 | {0.05 / 0.04453:.3f} | 1 |" in page
  assert "| denoise-lstm-t400 | 0.05427 | — | — | 0 |" in page


def test_a_presets_run_is_set_beside_the_harness_records_of_its_config(tmp_path):
  from experiments.reproduce import archive  # pylint: disable=g-import-not-at-top
  path = tmp_path / "ncgru-t2.json"
  archive.save(str(path), {"rows": {"denoise-goru-t200": {"seeds": {
      "0": {"steps": 10000, "metrics": {"min_train_loss": 0.0462}}}}}})
  summaries = pm.row_summaries(str(path), dm.TABLE)
  run = _run("denoise-goru-t200", "preset", 0.04453, 0.0386, 0.0407)
  (line,) = dm.reading_lines([run], summaries)
  assert "the mean of 10 already reaches the paper (0.0407 against 0.04453)" in line
  assert f"reads 0.0462 with means of 10 against 0.0407 here: a factor of {0.0462 / 0.0407:.2f}" \
      in line
  assert "spans the paper's value" in line
  far = _run("denoise-goru-t200", "preset", 0.04453, 0.0470, 0.0480)
  assert "does not reach the paper's value" in dm.reading_lines([far], summaries)[0]
  other = _run("denoise-goru-t200", "rho50", 0.04453, 0.0470, 0.0480)
  assert "harness's records" not in dm.reading_lines([other], summaries)[0]


def test_the_one_batch_minimum_of_a_trained_row_is_read_from_its_record(tmp_path, monkeypatch):
  from experiments.reproduce import archive  # pylint: disable=g-import-not-at-top
  path = tmp_path / "ncgru-t2.json"
  measured = {"size": 6400, "batch": 128, "loss": 0.012, "min": 0.0106, "std": 0.0005}
  archive.save(str(path), {"rows": {
      "denoise-ncgru-uc-t400": {"seeds": {"0": {
          "steps": 10000, "metrics": {"min_train_loss": 0.0119},
          "diagnostics": {"batch_minimum": measured}}}},
      "denoise-goru-t400": {"seeds": {"0": {"steps": 10000,
                                            "metrics": {"min_train_loss": 0.021},
                                            "diagnostics": {"batch_minimum": None}}}}}})
  monkeypatch.setattr(dm, "TABLE_RECORDS", str(path))
  page = dm.page([])
  assert "variables on 6,400 validation sequences in batches of 128 and" in page
  assert (f"| 0.0106 of 50 batches of 128 ({0.0106 / 0.00878:.3f}) | "
          f"{(0.012 - 0.00878) / 0.0005:.1f} |") in page
  assert "| denoise-goru-t400 | 0.0229 | 0.021 |" in page
  goru = next(line for line in page.splitlines() if line.startswith("| denoise-goru-t400 "))
  assert goru.endswith("| — | — |")


def test_the_normal_minimum_is_the_mean_smallest_of_n_draws():
  import numpy as np  # pylint: disable=g-import-not-at-top
  draws = np.random.default_rng(0).standard_normal((4000, 100)).min(axis=1)
  # 4,000 minima of sd about 0.43: their mean to 3 standard errors (0.02), plus the
  # approximation's own error near n = 100 (about 0.01)
  assert -draws.mean() == pytest.approx(dm.normal_minimum(100), abs=0.04)
  assert dm.normal_minimum(10000) > dm.normal_minimum(100) > dm.normal_minimum(2) > 0
