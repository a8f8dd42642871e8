"""experiments/parenthesis_metric.py: the minima of a loss history under each reading of NC-GRU
Table 1's "minimum attained loss", and the page written from its records alone."""

import numpy as np

from experiments import parenthesis_metric as pm


def test_the_page_comes_from_the_records():
  run = {"row": "parenthesis-ncgru-uc-t100", "paper": 0.286e-3, "steps": 10000,
         "minima": {"1": 0.0002, "10": 0.0019, "100": 0.004}, "command": "c", "commit": "abc",
         "machine": "m", "date": "d"}
  page = pm.page([run])
  assert "| parenthesis-ncgru-uc-t100 | 0.000286 | 0.0002 | 0.0019 | 0.004 | 0.70, 6.64 |" in page


def test_table_one_rows_run_at_the_codes_budget_and_log_its_epoch_means():
  from experiments.reproduce import rows, runner  # pylint: disable=g-import-not-at-top
  for row in rows.get("ncgru-t1").rows:
    c = runner.row_config(row)
    # the authors' code: 20,000 steps, one logged mean per 100 batches (its 200 epochs)
    assert (row.steps, c.train.steps, c.train.log_every, c.train.batch_size) == (
        20000, 20000, 100, 16)


def test_the_table_section_judges_the_archived_records(tmp_path):
  from experiments.reproduce import archive  # pylint: disable=g-import-not-at-top
  paper = 0.286e-3  # printed to three digits: half a unit of the last is 5e-7
  close = (paper - 2e-7, paper, paper + 2e-7)
  far = (paper, paper, 3 * paper)  # one seed three times the paper's value
  path = tmp_path / "ncgru-t1.json"
  archive.save(str(path), {"rows": {
      "parenthesis-ncgru-uc-t100": {"seeds": {
          str(k): {"steps": 20000, "metrics": {"min_train_loss": v}} for k, v in enumerate(close)}},
      "parenthesis-ncgru-uc-t200": {"seeds": {
          str(k): {"steps": 20000, "metrics": {"min_train_loss": v}} for k, v in enumerate(far)}},
      "parenthesis-gru-t100": {"seeds": {
          "0": {"steps": 10000, "metrics": {"min_train_loss": paper}}}}}})
  lines = {line.split(" | ")[0][2:]: line for line in pm.table_lines(pm.row_summaries(str(path)))[2:]}
  assert lines["parenthesis-ncgru-uc-t100"] == (
      f"| parenthesis-ncgru-uc-t100 | 0.000286 | {np.mean(close):.3g} ± "
      f"{np.std(close, ddof=1):.2g} | {np.mean(close) / paper:.3g}, {min(close) / paper:.3g} | "
      "3 | 20000 (20000) | meets |")
  assert lines["parenthesis-ncgru-uc-t200"].endswith("| 3 | 20000 (20000) | misses |")
  assert lines["parenthesis-gru-t100"].endswith("| 1 | 10000 (20000) | partial |")
  assert lines["parenthesis-lstm-t100"].endswith("| — | — | 0 | — (20000) | not run |")


def test_the_reading_computes_its_numbers_from_the_records(tmp_path):
  from experiments.reproduce import archive  # pylint: disable=g-import-not-at-top
  seeds = (0.5e-3, 1e-3)  # the paper's 0.227e-3 for NC-GRU(U_c) at T = 200
  path = tmp_path / "ncgru-t1.json"
  archive.save(str(path), {"rows": {"parenthesis-ncgru-uc-t200": {"seeds": {
      str(k): {"steps": 20000, "metrics": {"min_train_loss": v}} for k, v in enumerate(seeds)}}}})
  first = {"row": "parenthesis-ncgru-uc-t200", "paper": 0.227e-3, "steps": 10000,
           "minima": {"1": 0.227e-2, "10": 0.454e-2, "100": 0.5e-2}}
  lines = pm.reading_lines([first], pm.row_summaries(str(path)))
  text = "\n".join(lines)
  assert "stay 10.0 to 10.0 times the paper's value over single batches" in text
  assert (f"reach {np.mean(seeds) / 0.227e-3:.1f} to {np.mean(seeds) / 0.227e-3:.1f} times"
          in text)
  assert "against 20.0 to 20.0 times at the first preset" in text
  assert "factor of 2.0 to 2.0 between the best and the worst" in text
  assert "baselines beat" not in text  # no baseline row recorded


def test_the_weight_decay_section_sets_decayed_runs_against_the_archive(tmp_path):
  from experiments.reproduce import archive  # pylint: disable=g-import-not-at-top
  paper = 0.227e-3  # NC-GRU(U_c) at T = 200
  path = tmp_path / "ncgru-t1.json"
  archive.save(str(path), {"rows": {"parenthesis-ncgru-uc-t200": {"seeds": {
      str(k): {"steps": 20000, "metrics": {"min_train_loss": v}}
      for k, v in enumerate((4 * paper, 6 * paper))}}}})
  summaries = pm.row_summaries(str(path))
  decayed = [{"row": "parenthesis-ncgru-uc-t200", "readout_weight_decay": 1e-4, "seed": s,
              "steps": 20000, "minima": {"100": v * paper}} for s, v in ((0, 2.0), (1, 3.0))]
  undecayed = dict(decayed[0], readout_weight_decay=0.0, minima={"100": 0.1})
  assert pm.decay_groups(decayed + [undecayed]) == {
      ("parenthesis-ncgru-uc-t200", 1e-4): [2 * paper, 3 * paper]}
  table = "\n".join(pm.decay_lines(decayed, summaries))
  assert "| parenthesis-ncgru-uc-t200 | 0.0001 | 0.000227 |" in table
  assert "| 2.5, 2 | 5, 4 |" in table
  text = "\n".join(pm.decay_reading(decayed, summaries))
  assert "narrows the gap without closing it" in text and "2.5 to 2.5 times" in text
  assert "against 5.0 to 5.0 without it" in text and "lower in 1 of 1 rows" in text
  worse = [dict(r, minima={"100": 9 * paper}) for r in decayed]
  assert "does not close the gap" in "\n".join(pm.decay_reading(worse, summaries))
  assert pm.decay_lines([], summaries) == ["No run with weight decay on the readout is recorded."]


def _gru_archive(tmp_path, curves):
  """An archive of the GRU at T = 100 whose seeds have these curves of means of 100."""
  from experiments.reproduce import archive  # pylint: disable=g-import-not-at-top
  path = tmp_path / "ncgru-t1.json"
  archive.save(str(path), {"rows": {pm.GRU_ROW: {"seeds": {
      str(k): {"steps": 20000, "metrics": {"min_train_loss": min(c)},
               "curve": {"split": "train", "points": [[100 * (i + 1), v] for i, v in enumerate(c)]}}
      for k, c in enumerate(curves)}}}})
  return str(path)


def test_the_gru_section_reads_each_seeds_crossing_and_spikes(tmp_path):
  paper = 0.02994  # Table 1, GRU at T = 100
  harness = [[0.1, 0.05, 0.02, 0.04, 0.001], [0.1, 0.02, 0.01, 0.005, 0.002]]
  path = _gru_archive(tmp_path, harness)
  summaries = pm.row_summaries(path)
  further = {"row": pm.GRU_ROW, "seed": 3, "readout_weight_decay": 0.0, "steps": 300,
             "minima": {"100": 0.03}, "means_100": [0.1, 0.05, 0.03]}  # never below the paper
  decayed = {"row": pm.GRU_ROW, "seed": 0, "readout_weight_decay": 1e-4, "steps": 200,
             "minima": {"100": 0.001}, "means_100": [0.1, 0.001]}
  assert pm._crossing([(100, 0.1), (200, 0.02), (300, 0.04)], paper) == (200, 0.04)
  assert pm._crossing([(100, 0.1)], paper) == (None, None)
  table = pm.gru_lines([further, decayed], summaries)
  assert table[2] == (f"| the preset (the harness's records) | 0, 1 | 0.001, 0.002 | "
                      f"{0.0015 / paper:.3g}, {0.002 / paper:.3g} | 300, 200 | 0.04, 0.01 |")
  assert table[3].startswith("| the preset (further seeds, this script) | 3 | 0.03 |")
  assert table[3].endswith("| — | — |")
  assert table[4].startswith("| the preset with the readout's weight decay 0.0001 | 0 | 0.001 |")
  text = pm.gru_reading([further, decayed], summaries)[0]
  # seed 3's minimum (0.03) is above the paper's 0.02994: one of three seeds stalls
  assert text.startswith("- **1 of 3 seeds of the GRU at T = 100 stall at or above")
  assert "2 of 3 seeds of the preset end below the paper's value" in text
  assert "steps 200 to 300 of 20,000" in text
  assert "1 of them climb back above it later (up to 0.04)" in text
  assert "0 of 1 seeds at or above it" in text
  assert text.endswith("A stalled run is within the preset's spread.")
  learned = pm.gru_reading([dict(further, minima={"100": 0.01})], summaries)[0]
  assert "is not a seed that stalls" in learned and learned.endswith("stays `unexplained`.")
  assert pm.gru_lines([], pm.row_summaries(str(tmp_path / "none.json"))) == [
      "No run of the GRU at T = 100 is recorded."]
