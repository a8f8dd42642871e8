"""The nnRNN paper's result tables (Tables 1, 4, 6, 7) as reproduction rows.

Kerg, Goyette, Puelma Touzel, Gidel, Vorontsov, Bengio and Lajoie (2019), "Non-normal Recurrent
Neural Network (nnRNN): learning long time dependencies while improving expressivity with
transient dynamics", NeurIPS 2019, arXiv:1905.12080 (``papers/nnrnn_non-normal-rnn.md``; the
local copy prints neither the arXiv id nor the venue).

Table 1 (test BPC) and Table 4 (test accuracy of the same model states) are character-level
PTB with truncated BPTT of 150 or 300 steps, once at a fixed parameter budget (about 1.32M) and
once at N = 1024 hidden units; the "+-" of the paper is the standard error over 5 runs, kept in
the notes. The set-ups come from SM A.3 and Table 5 (100 epochs, batch 128, RMSprop, per-model
learning rates; Tables 2, 3 and 5 are hyperparameter tables, not results). Table 6 is the
Fisher memory curve of the linear model of Sec. 3 (no training), Table 7 nnRNN with the
eigenvalue moduli gamma clamped.
"""

import dataclasses

from experiments.reproduce.claims import Claim
from experiments.reproduce.rows import Row, Table, sentence

CITATION = ("Kerg, Goyette, Puelma Touzel, Gidel, Vorontsov, Bengio, Lajoie 2019, NeurIPS 2019, "
            "arXiv:1905.12080 (Non-normal Recurrent Neural Network (nnRNN))")

# 100 epochs at batch 128: ceil(ceil(5,017,481 targets / 128 rows) / BPTT) chunks per epoch.
CHUNKS = {150: 262, 300: 131}
EPOCHS = 100

# (slug, paper name, preset, paper hidden at the fixed budget, how the row trains)
MODELS = (
    ("rnn", "RNN", "rnn", 1024,
     "Table 5's RMSprop lr 1e-5, alpha 0.9 (set on the preset's Adam 1e-3); the recurrent "
     "kernel is Glorot-uniform here, Glorot-normal in the paper"),
    ("rnn-orth", "RNN-orth", "rnn_orth", 1024,
     "Table 5's RMSprop lr 1e-4, alpha 0.9 (set on the preset's Adam 1e-3); random orthogonal "
     "init at both lengths (the paper: Cayley at BPTT 300)"),
    ("eurnn", "EURNN", "eurnn", 2048,
     "Table 5's RMSprop lr 1e-3, alpha 0.9 (set on the preset's Adam 1e-3); capacity 2, which "
     "the paper does not state"),
    ("exprnn", "expRNN", "exprnn", 1386,
     "Table 5's RMSprop lr 5e-3, lr_orth 1e-4, alpha 0.9, Cayley init (set on the preset's "
     "Adam 1e-3)"),
    ("nnrnn", "nnRNN", "nnrnn", 1024,
     "the paper's Table 5: RMSprop lr 8e-4, alpha 0.9, lr_orth 8e-5 / 6e-5, delta 1 / 1e-4 "
     "(BPTT 150 / 300), T decay 1e-4, Cayley init"),
)

_RMSPROP = {"optim.optimizer": "rmsprop", "optim.rmsprop_decay": 0.9}
# Table 5's optimiser per preset where the ptb_char.py preset has another (the same at both
# lengths); the nnrnn preset is Table 5's
TABLE5_OPTIM = {
    "rnn": {**_RMSPROP, "optim.learning_rate": 1e-5},
    "rnn_orth": {**_RMSPROP, "optim.learning_rate": 1e-4},
    "eurnn": {**_RMSPROP, "optim.learning_rate": 1e-3},
    "exprnn": {**_RMSPROP, "optim.learning_rate": 5e-3, "optim.lr_orth": 1e-4,
               "model.cell.orthogonal_init": "cayley"},
    "nnrnn": {},
}

# hidden sizes of the ptb_char.py presets (one layer at the library's 1.32M budget, or 1024);
# a row overrides them with the paper's size (Table 5)
PRESET_HIDDEN = {"rnn": 1098, "rnn_orth": 1098, "eurnn": 1024, "exprnn": 1525, "nnrnn": 1024}

# The fixed-budget column at the paper's Table 5 sizes: what a size means here.
PARAMS_SIZE_NOTES = {
    "exprnn": ("; that is 1.10M effective parameters here (the skew-symmetric matrix counts "
               "n(n-1)/2), not the caption's 1.32M, which n 1525 would match"),
}

# Table 5's settings at BPTT 300 where they differ from the presets' (its BPTT-150 ones)
BPTT300_OVERRIDES = {"nnrnn": {"optim.lr_orth": 6e-5, "model.cell.delta": 1e-4}}

# epochs run here (of the paper's 100), per (preset, hidden)
EPOCHS_RUN = {
    ("rnn", 1024): 20, ("rnn_orth", 1024): 20,
    ("eurnn", 2048): 7, ("eurnn", 1024): 15,
    ("exprnn", 1386): 10, ("exprnn", 1024): 20,
    ("nnrnn", 1024): 20,
}


def budget_note(preset: str, hidden: int) -> str:
  """How many of the paper's epochs the row runs here."""
  return (f"budget: {EPOCHS_RUN[(preset, hidden)]} of the paper's {EPOCHS} epochs are run "
          f"here")


def gpu_blocker(preset: str, hidden: int) -> str:
  """The budget blocker of a PTB-char row: a GPU row (``--include-blocked`` runs it on the
  CPU)."""
  return f"budget: a GPU row ({EPOCHS_RUN[(preset, hidden)]} epochs at n = {hidden})"


# values per model: {(group, bptt): (value, standard error)}
BPC = {
    "rnn": {("params", 150): (2.89, 0.002), ("params", 300): (2.90, 0.0016),
            ("n1024", 150): (2.89, 0.002), ("n1024", 300): (2.90, 0.002)},
    "rnn-orth": {("params", 150): (1.62, 0.004), ("params", 300): (1.66, 0.006),
                 ("n1024", 150): (1.62, 0.004), ("n1024", 300): (1.66, 0.006)},
    "eurnn": {("params", 150): (1.61, 0.001), ("params", 300): (1.62, 0.001),
              ("n1024", 150): (1.69, 0.001), ("n1024", 300): (1.68, 0.001)},
    "exprnn": {("params", 150): (1.49, 0.008), ("params", 300): (1.52, 0.001),
               ("n1024", 150): (1.51, 0.005), ("n1024", 300): (1.55, 0.001)},
    "nnrnn": {("params", 150): (1.47, 0.003), ("params", 300): (1.49, 0.002),
              ("n1024", 150): (1.47, 0.003), ("n1024", 300): (1.49, 0.002)},
}

ACCURACY = {
    "rnn": {("params", 150): (40.01, 0.026), ("params", 300): (39.97, 0.025),
            ("n1024", 150): (40.01, 0.026), ("n1024", 300): (39.97, 0.025)},
    "rnn-orth": {("params", 150): (66.29, 0.07), ("params", 300): (65.53, 0.09),
                 ("n1024", 150): (66.29, 0.07), ("n1024", 300): (65.53, 0.09)},
    "eurnn": {("params", 150): (65.68, 0.002), ("params", 300): (65.55, 0.002),
              ("n1024", 150): (64.01, 0.002), ("n1024", 300): (64.20, 0.003)},
    "exprnn": {("params", 150): (68.07, 0.15), ("params", 300): (67.58, 0.04),
               ("n1024", 150): (67.51, 0.11), ("n1024", 300): (66.89, 0.024)},
    "nnrnn": {("params", 150): (68.78, 0.0006), ("params", 300): (68.52, 0.0004),
              ("n1024", 150): (68.78, 0.0006), ("n1024", 300): (68.52, 0.0004)},
}

COLUMNS = (("params", 150), ("params", 300), ("n1024", 150), ("n1024", 300))


def _ptb_row(slug, name, preset, paper_hidden, optim_note, group, bptt, metric, value, err,
             extra_note="", cell=None, runs_of_table=None):
  """One PTB-char row: ``preset`` of ``configs/ptb_char.py`` in column ``(group, bptt)``,
  with the cell options ``cell`` set on top; ``runs_of_table``: the table whose row of the
  same id trains the model this row reads (``Row.runs_of``). A fixed-budget row whose model
  has 1024 units, as the N = 1024 column's, reads that column's row of Table 1."""
  hidden = paper_hidden if group == "params" else 1024
  overrides = {**TABLE5_OPTIM[preset], **{f"model.cell.{k}": v for k, v in (cell or {}).items()}}
  if bptt != 150:
    overrides["task.options.bptt"] = bptt
    overrides.update(BPTT300_OVERRIDES.get(preset, {}))
  if hidden != PRESET_HIDDEN[preset]:
    overrides["model.hidden"] = hidden
  steps = EPOCHS * CHUNKS[bptt]
  if group == "params":
    where = f"fixed # params (~1.32M), BPTT {bptt}"
    size = f"n {paper_hidden} as the paper (Table 5)" + PARAMS_SIZE_NOTES.get(slug, "")
  else:
    where = f"fixed # hidden units (N = 1024), BPTT {bptt}"
    size = "n 1024 as the paper"
  row_id = source_id = f"ptbchar-{slug}-{group}-t{bptt}"
  notes = [extra_note]
  if group == "params" and hidden == 1024:  # the same config as the N = 1024 column
    source_id = f"ptbchar-{slug}-n1024-t{bptt}"
    runs_of_table = runs_of_table or "nnrnn-t1"
    notes.append(f"Table 5 lists {name} at 1024 units only and Table 1 prints the same values "
                 "in both columns: the fixed-budget model is the N = 1024 one, so this cell "
                 "reads the runs of that column's row in Table 1")
  note = sentence(f"the paper's +- {err} is the standard error over 5 runs", size, optim_note,
                  budget_note(preset, hidden), *notes)
  return Row(
      id=row_id, task=f"PTB-char, {where}", model=name,
      paper={metric: value}, config=f"ptb_char.py:{preset}", overrides=overrides,
      paper_params=(f"~1.32M params, n={paper_hidden}" if group == "params" else "n=1024"),
      steps=steps, run_steps=EPOCHS_RUN[(preset, hidden)] * CHUNKS[bptt], note=note,
      blocker=gpu_blocker(preset, hidden),
      runs_of=f"{runs_of_table}/{source_id}" if runs_of_table else None)


def _ptb_table(metric, values, extra_note="", runs_of_table=None):
  return tuple(
      _ptb_row(slug, name, preset, hidden, optim_note, group, bptt, metric,
               *values[slug][(group, bptt)], extra_note=extra_note,
               runs_of_table=runs_of_table)
      for slug, name, preset, hidden, optim_note in MODELS for group, bptt in COLUMNS)


T1 = Table(
    paper="nnrnn", number="1",
    caption=("PTB-char test bits per character, BPTT 150 / 300, at a fixed number of "
             "parameters (~1.32M) and at N = 1024 hidden units"),
    citation=CITATION,
    rows=_ptb_table("test_bpc", BPC),
)

T4 = Table(
    paper="nnrnn", number="4",
    caption=("PTB-char test accuracy (same model states as Table 1), BPTT 150 / 300, fixed "
             "parameters and N = 1024"),
    citation=CITATION,
    rows=_ptb_table("test_accuracy", ACCURACY,
                    extra_note="the same runs as Table 1 (the paper reports both metrics of "
                               "one model state)", runs_of_table="nnrnn-t1"),
)

# (alpha, beta, d, J_tot)
FMC = (
    (0.95, 0.0, 0.0, 3.03), (1.00, 0.0, 0.0, 5.19), (1.05, 0.0, 0.0, 12.1),
    (0.95, 0.005, 0.0, 3.18), (1.00, 0.005, 0.0, 5.30), (1.05, 0.005, 0.0, 12.1),
    (0.95, 0.0, 0.2, 12.0), (1.00, 0.0, 0.2, 16.2), (1.05, 0.0, 0.2, 20.5),
    (0.95, 0.005, 0.2, 12.1), (1.00, 0.005, 0.2, 16.3), (1.05, 0.005, 0.2, 20.4),
)

FMC_NOTE = ("computed (experiments/reproduce/analytic.py: lvf_jax.diagnostics, float64) with "
            "alpha on the sub-diagonal as Fig. 1(a) draws it; SM B's text puts sqrt(alpha) there "
            "(that delay line gives the closed form of Ganguli et al., tested), which does not "
            "give the table's values")
ILL_CONDITIONED = ("with d = 0.2 the noise covariance C that J inverts is ill-conditioned "
                   "beyond float64 (its condition number is in the record): the float64 value "
                   "depends on the solver, and the paper's likely did too")

T6 = Table(
    paper="nnrnn", number="6",
    caption=("Fisher memory curve: total J_tot = sum_t J(t) of the linear model of Sec. 3 "
             "(Theta of eq. 2, N = 100) for diagonal d, sub-diagonal alpha, lower triangle beta"),
    citation=CITATION,
    rows=tuple(
        Row(id=f"fmc-a{a:g}-b{b:g}-d{d:g}",
            task="Fisher memory curve, linear dynamics of eq. 1-2, N = 100",
            model=f"Theta(alpha={a:g}, beta={b:g}, d={d:g})", paper={"fmc_total": j},
            analytic="fmc_total", analytic_args={"alpha": a, "beta": b, "d": d},
            note=FMC_NOTE if d == 0 else ILL_CONDITIONED)
        for a, b, d, j in FMC),
)

# Table 7's clamped-gamma rows: (gamma, BPTT, test BPC, standard error, failed runs of 5)
CLAMPED = ((1, 150, 1.46, 0.005, "; 1 of the paper's 5 runs did not converge"),
           (1, 300, 1.49, 0.022, "; 2 of the paper's 5 runs did not converge"),
           (0.958, 150, 1.47, 0.005, ""), (0.958, 300, 1.49, 0.008, ""))

T7 = Table(
    paper="nnrnn", number="7",
    caption=("PTB-char test BPC of nnRNN with gamma learned (Table 1), clamped at 1, clamped at "
             "0.958; ~1.32M params, N = 1024; asterisks count failed runs out of 5"),
    citation=CITATION,
    rows=(
        _ptb_row("nnrnn", "nnRNN", "nnrnn", 1024, MODELS[4][4], "n1024", 150, "test_bpc", 1.47,
                 0.003, extra_note="the runs of Table 1's row", runs_of_table="nnrnn-t1"),
        _ptb_row("nnrnn", "nnRNN", "nnrnn", 1024, MODELS[4][4], "n1024", 300, "test_bpc", 1.49,
                 0.002, extra_note="the runs of Table 1's row", runs_of_table="nnrnn-t1"),
        *(_ptb_row(f"nnrnn-gamma{g}", f"nnRNN-gamma={g}", "nnrnn", 1024, MODELS[4][4],
                   "n1024", bptt, "test_bpc", value, err, cell={"fixed_gamma": float(g)},
                   extra_note=f"gamma clamped at {g} (`model.cell.fixed_gamma`){failed}")
          for g, bptt, value, err, failed in CLAMPED),
    ),
)

TABLES = {"t1": T1, "t4": T4, "t6": T6, "t7": T7}


# The paper's claims about its tables, as comparisons between rows
# (:mod:`experiments.reproduce.claims`), each with the sentence it comes from; a sentence
# behind several claims is written once.
QUOTE_1 = ('Importantly, without the use of gating mechanisms, our nnRNN outperformed all other '
           'models we tested.')
QUOTE_2 = ('As expected from Prop.1, non-zero β , which endows the dynamics with expressivity '
           '(Fig. 1(b)), does not significantly degrade the information propagation of the '
           'delay line.')
QUOTE_3 = ('Interestingly, the addition of diagonal terms ($d > 0$), i.e. Λ non-zero, helps to '
           'maintain almost optimal values of the FMC for $t < N$, while extending the memory '
           'beyond $t = N$, and thus outperforming the delay line with regards to the area '
           'under the FMC (see Table 3 in the supplemental materials (SM)).')
QUOTE_4 = ('Despite this, on runs that did converge we found the best performance out of all '
           'methods (including regularized γ nnRNN), strongly indicating that non-normality '
           'does indeed provide more expressivity.')
QUOTE_5 = ('For γ clamped at 0.958 the performance was virtually identical to that of nnRNN '
           'with regularized γ , indicating non-normal connectivity learning appears robust and '
           'independent of γ learning.')
CLAIMS = {
    't1': (
        Claim(
            text='nnRNN < RNN, RNN-orth, EURNN, expRNN, PTB-char test BPC (fixed params, BPTT 150)',
            quote=QUOTE_1,
            section='5.2 Penn Tree Bank (PTB) character-level prediction',
            metric='test_bpc',
            better=('ptbchar-nnrnn-params-t150',),
            than=('ptbchar-rnn-params-t150', 'ptbchar-rnn-orth-params-t150',
                  'ptbchar-eurnn-params-t150', 'ptbchar-exprnn-params-t150'),
            remark=('Holds in print: 1.47 vs expRNN 1.49 (gap 0.02). LSTM (1.37 BPC, better '
                    'than nnRNN) is mentioned in the text but is not a row. The following '
                    'sentences make claims about the SIZE of the gap to expRNN, which no '
                    "better/than pair expresses: 'While the performance gap to expRNN (the "
                    'state-of-the-art orthogonal RNN) is modest for equal number of parameters '
                    'and shorter time scale ($T_{PTB} = 150$), it appreciatively improves for '
                    '$T_{PTB} = 300$. Where the nnRNN shines is for equal numbers of hidden '
                    "units, where the performance gap to expRNN is much greater.' Printed gaps "
                    '0.02 (params, 150), 0.03 (params, 300), 0.04 (N=1024, 150), 0.06 (N=1024, '
                    '300) are consistent with them.')),
        Claim(
            text='nnRNN < RNN, RNN-orth, EURNN, expRNN, PTB-char test BPC (fixed params, BPTT 300)',
            quote=QUOTE_1,
            section='5.2 Penn Tree Bank (PTB) character-level prediction',
            metric='test_bpc',
            better=('ptbchar-nnrnn-params-t300',),
            than=('ptbchar-rnn-params-t300', 'ptbchar-rnn-orth-params-t300',
                  'ptbchar-eurnn-params-t300', 'ptbchar-exprnn-params-t300'),
            remark=('Holds in print: 1.49 vs expRNN 1.52 (gap 0.03). LSTM (1.37 BPC, better '
                    'than nnRNN) is mentioned in the text but is not a row. The following '
                    'sentences make claims about the SIZE of the gap to expRNN, which no '
                    "better/than pair expresses: 'While the performance gap to expRNN (the "
                    'state-of-the-art orthogonal RNN) is modest for equal number of parameters '
                    'and shorter time scale ($T_{PTB} = 150$), it appreciatively improves for '
                    '$T_{PTB} = 300$. Where the nnRNN shines is for equal numbers of hidden '
                    "units, where the performance gap to expRNN is much greater.' Printed gaps "
                    '0.02 (params, 150), 0.03 (params, 300), 0.04 (N=1024, 150), 0.06 (N=1024, '
                    '300) are consistent with them.')),
        Claim(
            text='nnRNN < RNN, RNN-orth, EURNN, expRNN, PTB-char test BPC (N=1024, BPTT 150)',
            quote=QUOTE_1,
            section='5.2 Penn Tree Bank (PTB) character-level prediction',
            metric='test_bpc',
            better=('ptbchar-nnrnn-n1024-t150',),
            than=('ptbchar-rnn-n1024-t150', 'ptbchar-rnn-orth-n1024-t150',
                  'ptbchar-eurnn-n1024-t150', 'ptbchar-exprnn-n1024-t150'),
            remark=('Holds in print: 1.47 vs expRNN 1.51 (gap 0.04). LSTM (1.37 BPC, better '
                    'than nnRNN) is mentioned in the text but is not a row. The following '
                    'sentences make claims about the SIZE of the gap to expRNN, which no '
                    "better/than pair expresses: 'While the performance gap to expRNN (the "
                    'state-of-the-art orthogonal RNN) is modest for equal number of parameters '
                    'and shorter time scale ($T_{PTB} = 150$), it appreciatively improves for '
                    '$T_{PTB} = 300$. Where the nnRNN shines is for equal numbers of hidden '
                    "units, where the performance gap to expRNN is much greater.' Printed gaps "
                    '0.02 (params, 150), 0.03 (params, 300), 0.04 (N=1024, 150), 0.06 (N=1024, '
                    '300) are consistent with them.')),
        Claim(
            text='nnRNN < RNN, RNN-orth, EURNN, expRNN, PTB-char test BPC (N=1024, BPTT 300)',
            quote=QUOTE_1,
            section='5.2 Penn Tree Bank (PTB) character-level prediction',
            metric='test_bpc',
            better=('ptbchar-nnrnn-n1024-t300',),
            than=('ptbchar-rnn-n1024-t300', 'ptbchar-rnn-orth-n1024-t300',
                  'ptbchar-eurnn-n1024-t300', 'ptbchar-exprnn-n1024-t300'),
            remark=('Holds in print: 1.49 vs expRNN 1.55 (gap 0.06). LSTM (1.37 BPC, better '
                    'than nnRNN) is mentioned in the text but is not a row. The following '
                    'sentences make claims about the SIZE of the gap to expRNN, which no '
                    "better/than pair expresses: 'While the performance gap to expRNN (the "
                    'state-of-the-art orthogonal RNN) is modest for equal number of parameters '
                    'and shorter time scale ($T_{PTB} = 150$), it appreciatively improves for '
                    '$T_{PTB} = 300$. Where the nnRNN shines is for equal numbers of hidden '
                    "units, where the performance gap to expRNN is much greater.' Printed gaps "
                    '0.02 (params, 150), 0.03 (params, 300), 0.04 (N=1024, 150), 0.06 (N=1024, '
                    '300) are consistent with them.')),
    ),
    't6': (
        Claim(
            text=('delay line alpha=1.05 (beta=0, d=0) < alpha=0.95 and alpha=1 (beta=0 or '
                  '0.005, d=0), J_tot'),
            quote=('The delay line from [8] with $\\alpha > 1$ (shown to be optimal for $t '
                   '\\leq N$) retains the most Fisher information across time up to time step N '
                   ', when the nilpotency of Θ erases all information.'),
            section='3.2 Non-normality allows for efficient information propagation',
            metric='fmc_total',
            better=('fmc-a1.05-b0-d0',),
            than=('fmc-a0.95-b0-d0', 'fmc-a1-b0-d0', 'fmc-a0.95-b0.005-d0', 'fmc-a1-b0.005-d0'),
            remark=("'Better' = larger J_tot (more Fisher memory). Derived: the sentence is "
                    'about the FMC up to t = N (Fig. 1(c)), and for d = 0 the matrix is '
                    'nilpotent, so J(t) = 0 for t >= N and J_tot equals the area up to N; hence '
                    'the claim implies this order of J_tot among the d = 0 rows. 12.1 vs 3.03, '
                    '5.19, 3.18, 5.30. The d = 0.2 rows are not comparable this way (their '
                    'J_tot includes t > N), and alpha=1.05 with beta=0.005 is covered by the '
                    "'comparable' claim below (12.1 = 12.1).")),
        Claim(
            text='beta=0.005 ~ beta=0 (alpha=0.95, d=0), J_tot',
            quote=QUOTE_2,
            section='3.2 Non-normality allows for efficient information propagation',
            metric='fmc_total',
            better=('fmc-a0.95-b0.005-d0',),
            than=('fmc-a0.95-b0-d0',),
            kind='not_worse',
            remark=("'Better' = larger J_tot (more Fisher memory). 'does not significantly "
                    "degrade': 3.18 vs 3.03 (beta=0.005 vs beta=0), within 5%; in print the "
                    'non-zero beta is never below beta=0 at d=0. The d = 0.2 pairs (12.1/12.0, '
                    '16.3/16.2, 20.4/20.5) are as close but the sentence is about the delay '
                    'line (d = 0).')),
        Claim(
            text='beta=0.005 ~ beta=0 (alpha=1, d=0), J_tot',
            quote=QUOTE_2,
            section='3.2 Non-normality allows for efficient information propagation',
            metric='fmc_total',
            better=('fmc-a1-b0.005-d0',),
            than=('fmc-a1-b0-d0',),
            kind='not_worse',
            remark=("'Better' = larger J_tot (more Fisher memory). 'does not significantly "
                    "degrade': 5.30 vs 5.19 (beta=0.005 vs beta=0), within 5%; in print the "
                    'non-zero beta is never below beta=0 at d=0. The d = 0.2 pairs (12.1/12.0, '
                    '16.3/16.2, 20.4/20.5) are as close but the sentence is about the delay '
                    'line (d = 0).')),
        Claim(
            text='beta=0.005 ~ beta=0 (alpha=1.05, d=0), J_tot',
            quote=QUOTE_2,
            section='3.2 Non-normality allows for efficient information propagation',
            metric='fmc_total',
            better=('fmc-a1.05-b0.005-d0',),
            than=('fmc-a1.05-b0-d0',),
            kind='not_worse',
            remark=("'Better' = larger J_tot (more Fisher memory). 'does not significantly "
                    "degrade': 12.1 vs 12.1 (beta=0.005 vs beta=0), within 5%; in print the "
                    'non-zero beta is never below beta=0 at d=0. The d = 0.2 pairs (12.1/12.0, '
                    '16.3/16.2, 20.4/20.5) are as close but the sentence is about the delay '
                    'line (d = 0).')),
        Claim(
            text='d=0.2 < d=0 (alpha=0.95, beta=0 and 0.005), J_tot',
            quote=QUOTE_3,
            section='3.2 Non-normality allows for efficient information propagation',
            metric='fmc_total',
            better=('fmc-a0.95-b0-d0.2', 'fmc-a0.95-b0.005-d0.2'),
            than=('fmc-a0.95-b0-d0', 'fmc-a0.95-b0.005-d0'),
            remark=("'Better' = larger J_tot (more Fisher memory). Read as: adding d > 0 to a "
                    'matrix raises its area under the FMC above the d = 0 matrix with the same '
                    "alpha: 12.0, 12.1 vs 3.03, 3.18. The text's 'Table 3 in the SM' is the "
                    "SM's Table 6 (this table).")),
        Claim(
            text='d=0.2 < d=0 (alpha=1, beta=0 and 0.005), J_tot',
            quote=QUOTE_3,
            section='3.2 Non-normality allows for efficient information propagation',
            metric='fmc_total',
            better=('fmc-a1-b0-d0.2', 'fmc-a1-b0.005-d0.2'),
            than=('fmc-a1-b0-d0', 'fmc-a1-b0.005-d0'),
            remark=("'Better' = larger J_tot (more Fisher memory). Read as: adding d > 0 to a "
                    'matrix raises its area under the FMC above the d = 0 matrix with the same '
                    "alpha: 16.2, 16.3 vs 5.19, 5.30. The text's 'Table 3 in the SM' is the "
                    "SM's Table 6 (this table).")),
        Claim(
            text='d=0.2 < d=0 (alpha=1.05, beta=0 and 0.005), J_tot',
            quote=QUOTE_3,
            section='3.2 Non-normality allows for efficient information propagation',
            metric='fmc_total',
            better=('fmc-a1.05-b0-d0.2', 'fmc-a1.05-b0.005-d0.2'),
            than=('fmc-a1.05-b0-d0', 'fmc-a1.05-b0.005-d0'),
            remark=("'Better' = larger J_tot (more Fisher memory). Read as: adding d > 0 to a "
                    'matrix raises its area under the FMC above the d = 0 matrix with the same '
                    "alpha: 20.5, 20.4 vs 12.1, 12.1. The text's 'Table 3 in the SM' is the "
                    "SM's Table 6 (this table).")),
        Claim(
            text='d=0.2 with alpha=1, 1.05 < the delay line alpha=1.05 (beta=0, d=0), J_tot',
            quote=QUOTE_3,
            section='3.2 Non-normality allows for efficient information propagation',
            metric='fmc_total',
            better=('fmc-a1-b0-d0.2', 'fmc-a1.05-b0-d0.2', 'fmc-a1-b0.005-d0.2',
                    'fmc-a1.05-b0.005-d0.2'),
            than=('fmc-a1.05-b0-d0',),
            remark=("'Better' = larger J_tot (more Fisher memory). Stricter reading: 'the delay "
                    "line' = the optimal delay line of the previous sentence (alpha > 1, i.e. "
                    'alpha=1.05). 16.2, 20.5, 16.3, 20.4 vs 12.1: holds.')),
        Claim(
            text='d=0.2 with alpha=0.95 < the delay line alpha=1.05 (beta=0, d=0), J_tot',
            quote=QUOTE_3,
            section='3.2 Non-normality allows for efficient information propagation',
            metric='fmc_total',
            better=('fmc-a0.95-b0-d0.2', 'fmc-a0.95-b0.005-d0.2'),
            than=('fmc-a1.05-b0-d0',),
            printed_holds=False,
            remark=("'Better' = larger J_tot (more Fisher memory). Only under the stricter "
                    "reading ('the delay line' = the optimal alpha=1.05 delay line): 12.0 and "
                    '12.1 vs 12.1, i.e. below or equal, so the printed values do not show '
                    'd=0.2, alpha=0.95 outperforming that delay line. Under the matched-alpha '
                    'reading (claims above) it holds. Keep or drop according to the reading '
                    'adopted.')),
    ),
    't7': (
        Claim(
            text=('nnRNN gamma=1 < nnRNN (learned gamma), nnRNN gamma=0.958, PTB-char test BPC, '
                  'BPTT 150'),
            quote=QUOTE_4,
            section='F Gradient propagation analysis',
            metric='test_bpc',
            better=('ptbchar-nnrnn-gamma1-n1024-t150',),
            than=('ptbchar-nnrnn-n1024-t150', 'ptbchar-nnrnn-gamma0.958-n1024-t150'),
            remark=('1.46 vs 1.47 and 1.47: holds, by 0.01 BPC (standard errors 0.003-0.005), '
                    "and only over converged runs (1 of 5 failed). 'All methods' also covers "
                    'the Table 1 models, which are not rows of this table.')),
        Claim(
            text=('nnRNN gamma=1 < nnRNN (learned gamma), nnRNN gamma=0.958, PTB-char test BPC, '
                  'BPTT 300'),
            quote=QUOTE_4,
            section='F Gradient propagation analysis',
            metric='test_bpc',
            better=('ptbchar-nnrnn-gamma1-n1024-t300',),
            than=('ptbchar-nnrnn-n1024-t300', 'ptbchar-nnrnn-gamma0.958-n1024-t300'),
            printed_holds=False,
            remark=('Not supported by the printed table: all three print 1.49 at BPTT 300 '
                    "(gamma=1: 1.49 +- 0.022, 2 of 5 runs failed), a tie, not 'the best "
                    "performance'.")),
        Claim(
            text=('nnRNN gamma=0.958 ~ nnRNN (learned gamma) (virtually identical), PTB-char '
                  'test BPC, BPTT 150'),
            quote=QUOTE_5,
            section='F Gradient propagation analysis',
            metric='test_bpc',
            better=('ptbchar-nnrnn-gamma0.958-n1024-t150',),
            than=('ptbchar-nnrnn-n1024-t150',),
            kind='not_worse',
            remark='1.47 vs 1.47.'),
        Claim(
            text=('nnRNN gamma=0.958 ~ nnRNN (learned gamma) (virtually identical), PTB-char '
                  'test BPC, BPTT 300'),
            quote=QUOTE_5,
            section='F Gradient propagation analysis',
            metric='test_bpc',
            better=('ptbchar-nnrnn-gamma0.958-n1024-t300',),
            than=('ptbchar-nnrnn-n1024-t300',),
            kind='not_worse',
            remark='1.49 vs 1.49.'),
    ),
}
TABLES = {k: dataclasses.replace(t, claims=CLAIMS.get(k, ())) for k, t in TABLES.items()}
