"""The reproduction harness, in one namespace.

The harness has three parts: the runner (:mod:`experiments.reproduce.runner`: configs,
locks, one record per seed), the verdicts (:mod:`experiments.reproduce.verdict`, pure, with
the floors of :mod:`experiments.reproduce.floors`) and the page writer
(:mod:`experiments.reproduce.pages`: records to Markdown and figures). The papers' rows are
data in ``experiments/reproduce/tables/``. This module re-exports the names scripts use.
"""

from __future__ import annotations

from experiments.reproduce.pages import (  # noqa: F401
    ALSO_SHOWN, STAND_IN_SHOWN, archive_results, curves_of, fmt, plot_table, row_results,
    steps_cell, summarize, table_markdown, write_index, write_table)
from experiments.reproduce.runner import (  # noqa: F401
    BASE_SEED, LOCK, RESULT, ROOT, SMOKE_DATA, _lock, _run_lock, budget_of, command,
    compute_row, git_commit, judge_row, last_of_run, load_config, machine, metrics_of_run,
    read_result, reevaluate_row, release_row, results_of_row, row_config, row_dir, run_row,
    shrink_data, shrink_for_smoke, started_at_commit, usable_cores, utc_now,
    wall_covers_run, write_result)
from experiments.reproduce.verdict import (  # noqa: F401
    CATEGORIES, EXACT, LOWER_IS_BETTER, Verdict, judge)
