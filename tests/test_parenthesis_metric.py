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
