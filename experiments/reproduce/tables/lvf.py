"""lvfRNN paper (Azencot, Erichson, Ben-Chen, Mahoney 2021, "A Differential Geometry
Perspective on Orthogonal Recurrent Models", arXiv:2102.09589), Tables 1-4.

Table 1 fixes 1024 hidden units for every model (Table 5 gives the lvfRNN kappa = 1400; the
preset follows Table 5). Table 3 matches about 350k parameters; Table 4 fixes 128 hidden
units. The paper states no training budget for any task: the step counts are the presets'.
"""

import dataclasses

from experiments.reproduce.claims import Claim
from experiments.reproduce.rows import Row, Table, sentence
from experiments.reproduce.tables import nnrnn as nnrnn_tables

CITATION = "Azencot et al. 2021 (arXiv:2102.09589)"

PTB_EPOCH = 262  # truncated-BPTT chunks of one epoch at batch 128, T = 150
PTB_BUDGET = dict(steps=50 * PTB_EPOCH, blocker="budget: a GPU row (50 epochs at batch 128)")
PTB_CPU_EPOCHS = 5  # the common reduced budget of the rows `ptb-*-cpu`
PTB_NOTE = ("a GPU row (`python -m experiments.gpu_kit`); the rows `ptb-*-cpu` run the "
            f"lvfRNN, RNN and expRNN for {PTB_CPU_EPOCHS} epochs on a CPU; a record of fewer "
            "steps is partial")
JSB_STEPS = 100 * 229  # 100 epochs of one sequence per update
MUSE_STEPS = 100 * 524
MUSE_AVERAGE = ("judged by the per-piece mean of the frame NLL, the average Table 3's "
                "MuseData column is consistent with (`docs/MUSIC_PROTOCOL.md`; the paper "
                "states none), the frame-weighted average of Boulanger-Lewandowski et al. "
                "2012 (arXiv:1206.6392) shown beside it; training minimises the "
                "frame-weighted NLL and model selection uses it; a record whose config has no "
                "`train_nll` trained on each piece's mean frame NLL")

_T1 = (("rnn", "RNN", 1.65, 62.23, "1024"), ("urnn", "uRNN", 1.62, 65.81, "1024"),
       ("eurnn", "euRNN", 1.61, 65.68, "1024"), ("fcurnn", "fcuRNN", 1.50, 68.01, "1024"),
       ("exprnn", "expRNN", 1.49, 68.07, "1024"), ("nnrnn", "nnRNN", 1.47, 68.78, "1024"),
       ("lvf", "lvfRNN", 1.43, 69.0, "1400"))

_T2 = (("eurnn", "euRNN", 16.0, 15.15, "378"), ("fcurnn", "fcuRNN", 14.96, 14.69, "256"),
       ("scornn", "scoRNN", 7.97, 7.36, "425"), ("exprnn", "expRNN", 5.52, 5.48, "425"),
       ("lvf", "lvfRNN", 6.46, 6.15, "510"))

_T3 = (("rnn", "RNN", 8.77, 6.39), ("urnn", "uRNN", 8.71, 6.61), ("eurnn", "euRNN", 8.65, 6.52),
       ("fcurnn", "fcuRNN", 8.69, 6.66), ("exprnn", "expRNN", 8.53, 6.53),
       ("nnrnn", "nnRNN", 8.84, 6.2), ("lvf", "lvfRNN", 8.36, 6.19))

_T4 = (("rnn", "RNN", 9.5e-2, 16.0, "19k"), ("urnn", "uRNN", 3.5e-3, 99.0, "6.5k"),
       ("eurnn", "euRNN", 2.1e-3, 99.0, "18.9k"), ("fcurnn", "fcuRNN", 1.6e-3, 99.0, "10.6k"),
       ("exprnn", "expRNN", 3.5e-6, 100.0, "10.6k"), ("nnrnn", "nnRNN", 3e-4, 100.0, "43.6k"),
       ("lvf", "lvfRNN", 2.1e-2, 95.0, "11k"))


DEVIATION = {
    "copy": "deviation from Table 5 (measured, `docs/LVF_DIVERGENCE.md`): the vector field "
            "at Adam 1e-5, the soft penalty of Sec. 4.3 (lambda = 10), gradients clipped at "
            "norm 1, the other weights at Adam 1e-3 with a cosine decay; the divergence stays "
            "free; the literal row below diverges",
    "jsb": "deviation from Table 5 (`configs/jsb.py`; the row `jsb-lvf-literal` is Table 5 as "
           "printed): vector field at Adam 1e-4; "
           "one sequence per update",
    "musedata": "deviation from Table 5 (`configs/musedata.py`): vector field at Adam 3e-5",
    "ptb": "deviation from Table 5 (`configs/ptb_char.py`): vector field at Adam 1.2e-5",
}


#: Table 4's baselines whose presets' losses are more than 10x below the printed ones, each
#: tested at Table 5's copy optimiser (the rows ``T4_ADAM``).
T4_ADAM_MODELS = ("urnn", "eurnn", "fcurnn", "nnrnn")
#: Those of them still more than 10x below at Adam 1e-4, each tested at the nnRNN authors'
#: copy protocol (the rows ``T4_NNRNN_CODE``).
T4_NNRNN_CODE_MODELS = ("urnn", "eurnn", "fcurnn")


# Settings of single rows where the paper is silent or its counts cannot hold.
ROW_NOTES = {
    ("copy", "eurnn"): (
        "the table's 18.9k parameters would need about 110 Givens layers at n = 128; the "
        "paper gives no capacity, the preset keeps the EUNN reference default of 2 layers"),
    ("copy", "fcurnn"): (
        "a full-capacity unitary 128 x 128 matrix alone has 16,384 real degrees of freedom, "
        "more than the table's 10.6k parameters: the table's count cannot hold at the "
        "caption's 128 units, which the preset keeps"),
    **{("jsb", preset): (
        "with the skew parameter at the reference code's lr / 10 the validation NLL turns "
        f"upward by the fifth epoch; at the common rate the row jsb-{preset}-lr-orth below "
        "reaches the paper's value (`docs/JSB_BASELINES.md`)") for preset in ("exprnn", "nnrnn")},
    **{("jsb", preset): (
        "the validation NLL turns upward from the second or third epoch and none of the "
        "settings tried (rates, RMSprop, dropout, readout weight decay) reaches the paper's "
        "value; the complex modReLU is part of the model (`docs/JSB_BASELINES.md`)")
       for preset in ("urnn", "eurnn", "fcurnn")},
}


# Table 4 states the hidden size (128) and nothing else of the baselines' training: where a
# preset's loss is far below the printed one, these are the settings it chose.
COPY_DIFFERS = {
    "urnn": "Table 4 gives no optimiser, batch or budget; the preset trains 10,000 steps at "
            "batch 50 with RMSprop 1e-3 (the uRNN paper's optimiser)",
    "eurnn": "Table 4 gives no optimiser, batch, budget or capacity; the preset trains "
             "10,000 steps at batch 50 with RMSprop 1e-3 and 2 Givens layers",
    "fcurnn": "Table 4 gives no optimiser, batch or budget; the preset trains 10,000 steps at "
              "batch 50 with RMSprop 1e-3 and the multiplicative Cayley step at 1e-3",
    "nnrnn": "Table 4 gives no optimiser, batch or budget; the preset is nnRNN Table 2's "
             "copy setting (batch 10, RMSprop 5e-4, 10,000 steps)",
}


def _note(task, preset, base=""):
  extra = DEVIATION[task] if preset == "lvf" else ""
  return "; ".join(n for n in (extra, ROW_NOTES.get((task, preset), ""), base) if n)


def _quoted_from_nnrnn(slug):
  """The note of a Table 1 cell whose values are the nnRNN paper's fixed-budget column
  (Kerg et al. 2019, arXiv:1905.12080, Tables 1 and 4, BPTT 150) rather than its N = 1024 one."""
  name, hidden = next((m[1], m[3]) for m in nnrnn_tables.MODELS if m[0] == slug)
  bpc, acc = nnrnn_tables.BPC[slug], nnrnn_tables.ACCURACY[slug]
  return (f"the printed {bpc['params', 150][0]:g} / {acc['params', 150][0]:g} % are the nnRNN "
          f"paper's fixed-budget {name} (n {hidden}; its N = 1024 {name} has "
          f"{bpc['n1024', 150][0]:g} / {acc['n1024', 150][0]:g} %), a row of nnrnn-t1; this "
          "row keeps the caption's 1024 units")


# Table 1's cells whose values are the nnRNN paper's fixed-budget ones.
T1_QUOTED = {slug: _quoted_from_nnrnn(slug) for slug in ("eurnn", "exprnn")}
# Table 1's nnRNN cell is the nnRNN paper's N = 1024, BPTT 150 model: it reads those runs.
T1_NNRNN_SOURCE = nnrnn_tables.T1.row("ptbchar-nnrnn-n1024-t150")


def _t1_row(preset, name, bpc, acc, hidden):
  paper = {"test_bpc": bpc, "test_accuracy": acc}
  if preset == "nnrnn":
    src = T1_NNRNN_SOURCE
    return Row(id=f"ptb-{preset}", task="PTB-char T=150", model=name, paper=paper,
               config=src.config, overrides=src.overrides, paper_params=f"n={hidden}",
               steps=src.steps, run_steps=src.run_steps, blocker=src.blocker,
               runs_of=f"nnrnn-t1/{src.id}",
               note=("Quoted by the paper from Kerg et al. 2019 (their Tables 1 and 4, "
                     "N = 1024, BPTT 150), so this cell reads the runs of that paper's row "
                     "(nnrnn-t1, whose note gives the set-up and what the runs showed): "
                     "100 epochs at batch 128, 20 run here"))
  overrides = {"model.hidden": 1024} if preset in ("rnn", "exprnn") else {}
  return Row(id=f"ptb-{preset}", task="PTB-char T=150", model=name, paper=paper,
             config=f"ptb_char.py:{preset}", overrides=overrides, paper_params=f"n={hidden}",
             note=sentence(T1_QUOTED.get(preset),
                           _note("ptb", preset, PTB_NOTE), end=""),
             **PTB_BUDGET)


# The lvfRNN, the tanh RNN and the expRNN at one common reduced budget on a CPU: their order
# compared like for like (each row: the preset of its model's row above, PTB_CPU_EPOCHS of 50).
T1_EQUAL = tuple(
    Row(id=f"ptb-{preset}-cpu", task="PTB-char T=150", model=name,
        paper={"test_bpc": bpc, "test_accuracy": acc}, config=f"ptb_char.py:{preset}",
        overrides={"model.hidden": 1024} if preset != "lvf" else {},
        paper_params=f"n={hidden}", steps=50 * PTB_EPOCH, run_steps=PTB_CPU_EPOCHS * PTB_EPOCH,
        note=(f"the same budget for the three models of this group ({PTB_CPU_EPOCHS} epochs of "
              f"the 50, {PTB_CPU_EPOCHS * PTB_EPOCH} steps at batch 128), to compare their "
              "order like for like"))
    for preset, name, bpc, acc, hidden in _T1 if preset in ("lvf", "rnn", "exprnn"))

# The lvfRNN's cell of Table 1 and the rows below that vary its setting.
LVF_T1_PAPER = next({"test_bpc": bpc, "test_accuracy": acc}
                    for preset, _, bpc, acc, _ in _T1 if preset == "lvf")
PTB_GPU_BLOCKER = "budget: a GPU row (50 epochs at n = 1400)"
SEPARATE_NOTE = ("the field by its divergence-free part (Adam 2e-4) and its divergence (Adam "
                 "1.2e-5), the midpoint map (`configs/ptb_char.py:lvf_separate`)")


def _t1_lvf_row(id_, config, note, **kw):
  """A Table 1 lvfRNN row of 50 epochs (``kw``: the run budget, a blocker, overrides)."""
  return Row(id=id_, task="PTB-char T=150", model="lvfRNN", paper=LVF_T1_PAPER,
             config=config, paper_params="n=1400", steps=50 * PTB_EPOCH, note=note, **kw)


# The lvfRNN with its divergence at its own rate and the midpoint map, at the same budget.
T1_EQUAL_SEPARATE = _t1_lvf_row(
    "ptb-lvf-separate-cpu", "ptb_char.py:lvf_separate",
    f"the budget of the rows `ptb-*-cpu` ({PTB_CPU_EPOCHS} epochs of the 50); {SEPARATE_NOTE}",
    run_steps=PTB_CPU_EPOCHS * PTB_EPOCH)

# The same, with the divergence-free part of the field at twice its rate: whether the
# field's rate still limits the lvfRNN at this budget.
T1_EQUAL_SEPARATE_FAST = _t1_lvf_row(
    "ptb-lvf-separate-vf4e-4-cpu", "ptb_char.py:lvf_separate",
    f"the row `ptb-lvf-separate-cpu` with the field's divergence-free part at Adam 4e-4 "
    f"instead of 2e-4 ({PTB_CPU_EPOCHS} epochs of the 50)",
    overrides={"optim.lr_vector_field": 4e-4}, run_steps=PTB_CPU_EPOCHS * PTB_EPOCH)

# The same lvfRNN at the full 50 epochs: a GPU row.
T1_SEPARATE = _t1_lvf_row("ptb-lvf-separate", "ptb_char.py:lvf_separate", SEPARATE_NOTE,
                          blocker=PTB_GPU_BLOCKER)

# The lvfRNN's full 50 epochs with tau and the vector field's learning rate varied around
# the preset (tau 5, Adam 1.2e-5 for V): GPU rows.
PTB_SWEEP = (("tau2.5", 2.5, 1.2e-5), ("tau10", 10.0, 1.2e-5), ("vf6e-6", 5.0, 6e-6),
             ("vf2.4e-5", 5.0, 2.4e-5))
T1_SWEEP = tuple(
    _t1_lvf_row(f"ptb-lvf-{suffix}", "ptb_char.py:lvf",
                f"the `ptb_char.py:lvf` preset with tau {tau:g} and the vector field at Adam "
                f"{lr:g}", overrides={"model.cell.tau": tau, "optim.lr_vector_field": lr},
                blocker=PTB_GPU_BLOCKER)
    for suffix, tau, lr in PTB_SWEEP)


TIMIT_STEPS = 1200 * 28  # configs/timit.py: 1200 epochs of 3,640 utterances at batch 128


def _t2_row(preset, name, val, test, kappa):
  return Row(id=f"timit-{preset}", task="TIMIT", model=name,
             paper={"val_loss": val, "test_loss": test}, config=f"timit.py:{preset}",
             steps=TIMIT_STEPS,
             paper_params=f"~200k (n={kappa})",
             blocker="no data: TIMIT is licensed (LDC); configs/fsdd.py runs the same "
                     "pipeline on the free FSDD corpus (the FSDD rows below)")


FSDD_STEPS = 1200 * (2400 // 128)  # configs/fsdd.py: TIMIT's 1200 epochs at batch 128
FSDD_NOTE = ("stand-in for the TIMIT row above (no paper value): the same pipeline and "
             "settings on the free FSDD corpus (`configs/fsdd.py`); Table 2 ranks the models "
             "by validation MSE expRNN 5.52 < lvfRNN 6.46 < scoRNN 7.97 < fcuRNN 14.96 < "
             "euRNN 16.0")


def _t2_fsdd_row(preset, name, val, test, kappa):
  del val, test  # TIMIT's figures; FSDD has none in the paper
  return Row(id=f"fsdd-{preset}", task="FSDD (TIMIT stand-in)", model=name, paper={},
             config=f"fsdd.py:{preset}", paper_params=f"~200k (n={kappa})",
             steps=FSDD_STEPS, note=FSDD_NOTE)


# MuseData's metric is a mean over pieces: its per-piece spread shows what dominates it.
MUSE_DIAGNOSTICS = {"piece_nll": {}}


def _t3_rows(preset, name, jsb, muse):
  return (Row(id=f"jsb-{preset}", task="JSB", model=name, paper={"test_loss": jsb},
              config=f"jsb.py:{preset}", paper_params="~350k", steps=JSB_STEPS,
              seeds=3 if preset == "lvf" else 1, note=_note("jsb", preset)),
          Row(id=f"musedata-{preset}", task="MuseData", model=name,
              paper={"test_nll_per_sequence": muse}, config=f"musedata.py:{preset}",
              paper_params="~350k", steps=MUSE_STEPS, seeds=3 if preset == "lvf" else 1,
              diagnostics=MUSE_DIAGNOSTICS, note=_note("musedata", preset, MUSE_AVERAGE)))


def _t4_row(preset, name, ce, acc, params):
  return Row(id=f"copy-{preset}", task="copy T=200", model=name,
             paper={"test_loss": ce, "test_accuracy": acc}, config=f"copy.py:{preset}",
             paper_params=params, seeds=3 if preset == "lvf" else 1, steps=10000,
             note=_note("copy", preset), differs=COPY_DIFFERS.get(preset, ""),
             explained_by=_t4_tested(preset))


def _t4_tested(preset):
  """The study rows that test a setting for Table 4's row of ``preset`` (those built from
  its config)."""
  return tuple(f"lvf-t4/{r.id}" for r in T4_ADAM + T4_NNRNN_CODE + T4_FCURNN_SIZE
               if r.config == f"copy.py:{preset}")


LITERAL_NOTE = ("Table 5 exactly as printed (the preset `{}`); the row above is the preset "
                "that reproduces, with its deviation documented in `configs/{}`")

# The JSB baselines whose validation NLL rises from the second epoch with modReLU, with tanh
# in its place (docs/JSB_BASELINES.md); the lvfRNN paper gives no baseline's nonlinearity.
JSB_TANH_NOTE = ("the preset with tanh in place of the expRNN and nnRNN papers' modReLU: with "
                 "modReLU the validation NLL rises from the second epoch while the training "
                 "NLL is still above the tanh RNN's (`docs/JSB_BASELINES.md`, one trial at a "
                 "time); Table 3 gives no baseline's nonlinearity")
T3_TANH = tuple(
    Row(id=f"jsb-{preset}-tanh", task="JSB", model=f"{name} (tanh)", paper={"test_loss": jsb},
        config=f"jsb.py:{preset}", overrides={"model.cell.activation": "tanh"},
        paper_params="~350k", steps=JSB_STEPS, note=JSB_TANH_NOTE)
    for preset, name, jsb, _ in _T3 if preset in ("exprnn", "nnrnn"))

# The expRNN and nnRNN on JSB with their skew parameter at the rate of every other parameter in
# place of the presets' lr / 10 (docs/JSB_BASELINES.md); the lvfRNN paper gives no baseline's
# rates.
JSB_LR_ORTH_NOTE = ("the preset with the skew parameter at Adam 1e-3, the rate of every other "
                    "parameter, in place of the reference codes' lr / 10: at lr / 10 the "
                    "validation NLL turns upward by the fifth epoch (`docs/JSB_BASELINES.md`, "
                    "one trial at a time); Table 3 gives no baseline's rates")
T3_LR_ORTH = tuple(
    Row(id=f"jsb-{preset}-lr-orth", task="JSB", model=f"{name} (skew at lr)",
        paper={"test_loss": jsb}, config=f"jsb.py:{preset}", overrides={"optim.lr_orth": 1e-3},
        paper_params="~350k", steps=JSB_STEPS, note=JSB_LR_ORTH_NOTE)
    for preset, name, jsb, _ in _T3 if preset in ("exprnn", "nnrnn"))

# The same change on MuseData, where the expRNN's validation NLL is lowest at its tenth epoch
# and the nnRNN's and expRNN's rows stay about a nat above the paper's.
MUSE_LR_ORTH_NOTE = ("the preset with the skew parameter at Adam 1e-3, the rate of every other "
                     "parameter, in place of the reference codes' lr / 10: the one change with "
                     "which jsb-exprnn-lr-orth and jsb-nnrnn-lr-orth reach Table 3's JSB "
                     "values; " + MUSE_AVERAGE)
T3_MUSE_LR_ORTH = tuple(
    Row(id=f"musedata-{preset}-lr-orth", task="MuseData", model=f"{name} (skew at lr)",
        paper={"test_nll_per_sequence": muse}, config=f"musedata.py:{preset}",
        overrides={"optim.lr_orth": 1e-3}, paper_params="~350k", steps=MUSE_STEPS,
        diagnostics=MUSE_DIAGNOSTICS, note=MUSE_LR_ORTH_NOTE)
    for preset, name, _, muse in _T3 if preset in ("exprnn", "nnrnn"))

T3_LITERAL = Row(id="jsb-lvf-literal", task="JSB", model="lvfRNN (Table 5 literal)",
                 paper={"test_loss": 8.36}, config="jsb.py:lvf_literal", paper_params="~350k",
                 steps=JSB_STEPS, note=LITERAL_NOTE.format("jsb.py:lvf_literal", "jsb.py"))
T4_LITERAL = Row(id="copy-lvf-literal", task="copy T=200", model="lvfRNN (Table 5 literal)",
                 paper={"test_loss": 2.1e-2, "test_accuracy": 95.0},
                 config="copy.py:lvf_literal", paper_params="11k", steps=10000, seeds=3,
                 note=("Table 5 exactly as printed (the preset `copy.py:lvf_literal`); why it "
                       "diverges, one change at a time: `docs/LVF_DIVERGENCE.md`"))

T4_DIVFREE = Row(id="copy-lvf-divfree", task="copy T=200",
                 model="lvfRNN with div V = 0 (an orthogonal RNN)",
                 paper={"test_loss": 2.1e-2, "test_accuracy": 95.0},
                 config="copy.py:lvf_divfree", paper_params="11k", steps=20000,
                 note=("the hard constraint of Sec. 4.3: with div V = 0, D_V is skew and the "
                       "midpoint map orthogonal (Thm. 1), so this is the lvfRNN's orthogonal "
                       "special case, not the model of Table 5; Adam 3e-4 for 20,000 steps, "
                       "twice the budget of the other copy rows"))

# The soft-penalty preset's sweep beyond its 10,000 steps: the other budgets and the
# divergence parametrisation that bound how far one optimiser step moves div V.
T4_SWEEP = (
    Row(id="copy-lvf-20k", task="copy T=200", model="lvfRNN",
        paper={"test_loss": 2.1e-2, "test_accuracy": 95.0}, config="copy.py:lvf",
        overrides={"train.steps": 20000, "optim.total_steps": 20000}, paper_params="11k",
        steps=20000, seeds=3,
        note=("the `copy.py:lvf` preset (soft penalty, divergence free to move) with twice "
              "the budget (cosine schedule over 20,000 steps)")),
    Row(id="copy-lvf-separate", task="copy T=200", model="lvfRNN",
        paper={"test_loss": 2.1e-2, "test_accuracy": 95.0}, config="copy.py:lvf",
        overrides={"model.cell.separate_divergence": True, "optim.lr_vector_field": 1e-4},
        paper_params="11k", steps=10000,
        note=("the `copy.py:lvf` preset with the field parametrised by its divergence-free "
              "part and its divergence (`separate_divergence`: a step moves each (div V)_i "
              "by about the learning rate), both at Adam 1e-4")),
    Row(id="copy-lvf-separate-rates", task="copy T=200", model="lvfRNN",
        paper={"test_loss": 2.1e-2, "test_accuracy": 95.0}, config="copy.py:lvf_separate",
        paper_params="11k", steps=10000, seeds=3,
        note=("the field parametrised by its divergence-free part (Adam 3e-4) and its "
              "divergence (Adam 1e-5), free to move; the other weights at Adam 3e-4, cosine "
              "decay over the 10k steps, lambda 10 (`configs/copy.py:lvf_separate`)")),
    Row(id="copy-lvf-hard", task="copy T=200", model="lvfRNN with div V = 0 (an orthogonal RNN)",
        paper={"test_loss": 2.1e-2, "test_accuracy": 95.0}, config="copy.py:lvf",
        overrides={"model.cell.divergence_free": True}, paper_params="11k", steps=10000,
        note=("the `copy.py:lvf` preset with the hard constraint div V = 0 and nothing else "
              "changed: a control that tells the divergence's part in the `copy-lvf` row from "
              "the optimiser's")),
    Row(id="copy-lvf-hard-vf3e-4", task="copy T=200",
        model="lvfRNN with div V = 0 (an orthogonal RNN)",
        paper={"test_loss": 2.1e-2, "test_accuracy": 95.0}, config="copy.py:lvf",
        overrides={"model.cell.divergence_free": True, "optim.lr_vector_field": 3e-4},
        paper_params="11k", steps=10000,
        note=("`copy-lvf-hard` with V at Adam 3e-4, the rate of `copy.py:lvf_divfree`: "
              "whether the field's rate alone gives that preset's accuracy")),
)


# The baselines of Table 4 at the optimiser and rate Table 5 gives the lvfRNN's copy row
# (Adam 1e-4), one change to each preset: whether the printed losses, from 28 to about 10^8
# times the presets', are those of that slower optimiser. Table 4 gives no optimiser.
T4_ADAM_NOTE = ("the preset with Adam 1e-4, Table 5's optimiser and rate for the lvfRNN's copy "
                "row, in place of its RMSprop: whether the printed loss is that of the slower "
                "optimiser; Table 4 gives no baseline's optimiser")
T4_ADAM_ORTH = {"fcurnn": {"optim.lr_orth": 1e-4}}  # the preset ties the Cayley step to lr


def _t4_study(models, suffix, label, overrides, steps, note, per_preset=None):
  """Table 4's rows of ``models`` with one change each (``overrides``, and
  ``per_preset[preset]`` where a preset needs its own), as study rows ``copy-<preset>-<suffix>``."""
  return tuple(
      Row(id=f"copy-{preset}-{suffix}", task="copy T=200", model=f"{name} ({label})",
          paper={"test_loss": ce, "test_accuracy": acc}, config=f"copy.py:{preset}",
          overrides={**overrides, **(per_preset or {}).get(preset, {})},
          paper_params=params, steps=steps, note=note)
      for preset, name, ce, acc, params in _T4 if preset in models)


T4_ADAM = _t4_study(T4_ADAM_MODELS, "adam-1e-4", "Adam 1e-4",
                    {"optim.optimizer": "adam", "optim.learning_rate": 1e-4}, 10000,
                    T4_ADAM_NOTE, T4_ADAM_ORTH)

# The same baselines at the copy protocol of the nnRNN paper, whose task setting (T = 200,
# K = 10, 128 hidden units) Table 4 shares: batch 10 (Kerg et al. 2019, arXiv:1905.12080,
# App. A.1) for the 1,500 updates of its authors' code (KyleGoyette/nnRNN, `copytask.py`),
# in place of the presets' batch 50 for 10,000 steps. Table 4 gives no budget.
T4_NNRNN_CODE_NOTE = ("the preset at the nnRNN paper's copy protocol, batch 10 (its App. A.1) "
                      "for the 1,500 updates of its authors' code (`copytask.py`), in place "
                      "of batch 50 for 10,000 steps: whether the printed loss is that of the "
                      "shorter protocol; Table 4 gives no baseline's budget or batch")
T4_NNRNN_CODE = _t4_study(T4_NNRNN_CODE_MODELS, "nnrnn-code", "batch 10, 1,500",
                          {"train.batch_size": 10}, 1500, T4_NNRNN_CODE_NOTE)

# The fcuRNN at hidden sizes whose parameter count is Table 4's 10.6k, which cannot hold at
# the caption's 128 units: n = 85 counts 10,549 with the unitary matrix's n^2 real degrees of
# freedom, n = 64 counts 10,697 with its 2 n^2 stored reals (a complex n x n matrix kept as
# its real and imaginary parts). Nothing else changes.
T4_FCURNN_SIZES = (85, 64)
T4_FCURNN_SIZE_NOTE = ("the preset at a hidden size whose parameter count is the table's "
                       "10.6k, in place of the caption's 128 units: whether the printed loss "
                       "is that of a smaller fcuRNN; nothing else changed")
T4_FCURNN_SIZE = tuple(
    row for n in T4_FCURNN_SIZES
    for row in _t4_study(("fcurnn",), f"n{n}", f"n = {n}", {"model.hidden": n}, 10000,
                         T4_FCURNN_SIZE_NOTE))

#: What ``copy.py:lvf_separate`` changes from Table 5 as printed (``copy.py:lvf_literal``):
#: ``(key, the change, its overrides on the literal preset, the overrides that undo it on
#: lvf_separate)``.
COPY_CHANGES = (
    ("separate", "the divergence stored apart at Adam 1e-5",
     {"model.cell.separate_divergence": True, "optim.lr_divergence": 1e-5},
     {"model.cell.separate_divergence": False}),
    ("penalty", "the soft penalty lambda = 10 (Sec. 4.3)", {"model.cell.div_penalty": 10.0},
     {"model.cell.div_penalty": 0.0}),
    ("lr", "the other weights at Adam 3e-4", {"optim.learning_rate": 3e-4},
     {"optim.learning_rate": 1e-4}),
    ("lr-field", "the field at Adam 3e-4", {"optim.lr_vector_field": 3e-4},
     {"optim.lr_vector_field": 1e-4}),
    ("cosine", "a cosine decay over the 10,000 steps", {"optim.lr_schedule": "cosine"},
     {"optim.lr_schedule": "constant"}),
)


def _ablation_row(key: str, change: str, overrides: dict, alone: bool) -> Row:
  base = "copy.py:lvf_literal" if alone else "copy.py:lvf_separate"
  what = (f"Table 5 as printed with one change: {change}" if alone else
          f"`copy.py:lvf_separate` without one change: {change} undone")
  return Row(id=f"copy-lvf-abl-{'' if alone else 'no-'}{key}", task="copy T=200",
             model="lvfRNN", paper={"test_loss": 2.1e-2, "test_accuracy": 95.0}, config=base,
             overrides=overrides, paper_params="11k", steps=10000, seeds=3,
             diagnostics={"field_divergence": {}},
             note=f"{what} (`docs/COPY_ABLATION.md`)")


# Which of lvf_separate's changes Table 5's model needs: each alone, and the preset without it.
T4_ABLATION = tuple(_ablation_row(key, change, on, True) for key, change, on, _ in COPY_CHANGES
                    ) + tuple(_ablation_row(key, change, off, False)
                              for key, change, _, off in COPY_CHANGES)

TABLES = {
    "t1": Table("lvf", "1", "PTB character level, T = 150, 1024 hidden units: test BPC and "
                "accuracy.", CITATION,
                tuple(_t1_row(*r) for r in _T1) + T1_EQUAL
                + (T1_EQUAL_SEPARATE, T1_EQUAL_SEPARATE_FAST, T1_SEPARATE) + T1_SWEEP),
    "t2": Table("lvf", "2", "TIMIT speech frame prediction, about 200k parameters: "
                "validation and test MSE.", CITATION,
                tuple(_t2_row(*r) for r in _T2) + tuple(_t2_fsdd_row(*r) for r in _T2)),
    "t3": Table("lvf", "3", "Polyphonic music, about 350k parameters: test negative "
                "log-likelihood per frame.", CITATION,
                tuple(_t3_rows(*spec)[0] for spec in _T3) + (T3_LITERAL,) + T3_TANH + T3_LR_ORTH +
                tuple(_t3_rows(*spec)[1] for spec in _T3) + T3_MUSE_LR_ORTH),
    "t4": Table("lvf", "4", "Copy task T = 200, K = 10, 128 hidden units: test cross "
                "entropy and accuracy of the copied symbols.", CITATION,
                tuple(_t4_row(*r) for r in _T4) + (T4_DIVFREE, T4_LITERAL) + T4_SWEEP
                + T4_ABLATION + T4_ADAM + T4_NNRNN_CODE + T4_FCURNN_SIZE),
}


# The paper's claims about its tables, as comparisons between rows
# (:mod:`experiments.reproduce.claims`), each with the sentence it comes from; a sentence
# behind several claims is written once.
QUOTE_1 = ('Overall, our method achieves good results on long-term memory tasks such as the '
           'copy task, whereas on tasks that require both high expressivity and memory, our '
           'approach attains the best results in comparison to other approaches. These results '
           'highlight the expressivity of our model since the hidden size is fixed in this '
           'setting.')
QUOTE_2 = ('The results for this experiment of the mean squared error loss are shown in Tab. 2, '
           'where our method and expRNN beat the other approaches by a large margin.')
QUOTE_3 = ('In this task, 1vfRNN obtains significantly better test loss measures in comparison '
           'to all other methods for both of the datasets, as we report in Tab. 3.')
QUOTE_4 = ('We note that while our approach achieves a loss value which is relatively high, the '
           'obtained accuracy is comparable to all other unitary RNNs.')
CLAIMS = {
    't1': (
        Claim(
            text='lvfRNN < RNN, uRNN, euRNN, fcuRNN, expRNN, nnRNN, PTB-char test BPC',
            quote=QUOTE_1,
            section=('5 Experiments (opening paragraphs; the sentence is split by Algorithm 2 '
                     'in the text) and 5.1 Character level prediction task'),
            metric='test_bpc',
            better=('ptb-lvf',),
            than=('ptb-rnn', 'ptb-urnn', 'ptb-eurnn', 'ptb-fcurnn', 'ptb-exprnn', 'ptb-nnrnn'),
            remark=("Section 5.1 states no explicit ranking; the 'best results' claim is the "
                    'Section 5 overview sentence (PTB read as a task needing expressivity, per '
                    "Section 5.1's own sentence) and Table 1 prints 'Ours' in bold in both "
                    "columns. Row ptb-lvf stands for the paper's 'Ours' cell; alternatives "
                    'running the same cell: ptb-lvf-cpu, ptb-lvf-separate-cpu, '
                    'ptb-lvf-separate-vf4e-4-cpu, ptb-lvf-separate, ptb-lvf-tau2.5, '
                    'ptb-lvf-tau10, ptb-lvf-vf6e-6, ptb-lvf-vf2.4e-5; and ptb-rnn-cpu / '
                    'ptb-exprnn-cpu for RNN / expRNN. 1.43 vs 1.47 (nnRNN) is the smallest gap.')),
        Claim(
            text='lvfRNN < RNN, uRNN, euRNN, fcuRNN, expRNN, nnRNN, PTB-char test accuracy',
            quote=QUOTE_1,
            section=('5 Experiments (opening paragraphs; the sentence is split by Algorithm 2 '
                     'in the text) and 5.1 Character level prediction task'),
            metric='test_accuracy',
            better=('ptb-lvf',),
            than=('ptb-rnn', 'ptb-urnn', 'ptb-eurnn', 'ptb-fcurnn', 'ptb-exprnn', 'ptb-nnrnn'),
            remark=("Section 5.1 states no explicit ranking; the 'best results' claim is the "
                    'Section 5 overview sentence (PTB read as a task needing expressivity, per '
                    "Section 5.1's own sentence) and Table 1 prints 'Ours' in bold in both "
                    "columns. Row ptb-lvf stands for the paper's 'Ours' cell; alternatives "
                    'running the same cell: ptb-lvf-cpu, ptb-lvf-separate-cpu, '
                    'ptb-lvf-separate-vf4e-4-cpu, ptb-lvf-separate, ptb-lvf-tau2.5, '
                    'ptb-lvf-tau10, ptb-lvf-vf6e-6, ptb-lvf-vf2.4e-5; and ptb-rnn-cpu / '
                    'ptb-exprnn-cpu for RNN / expRNN. 69.0 vs 68.78 (nnRNN) is the smallest gap '
                    '(0.22 points).')),
    ),
    't2': (
        Claim(
            text='lvfRNN, expRNN < euRNN, fcuRNN, scoRNN, TIMIT test MSE',
            quote=QUOTE_2,
            section='5.2 TIMIT speech task (the sentence is split by Tables 2-3 in the text)',
            metric='test_loss',
            better=('timit-lvf', 'timit-exprnn'),
            than=('timit-eurnn', 'timit-fcurnn', 'timit-scornn'),
            remark=('Holds in print; the smallest gap is lvfRNN vs scoRNN (6.15 vs 7.36 test, '
                    '6.46 vs 7.97 val). The text makes no claim between lvfRNN and expRNN; in '
                    'print expRNN is better (5.48 vs 6.15 test, 5.52 vs 6.46 val), which the '
                    "abstract's generic 'comparable or better results' glosses over. The FSDD "
                    'stand-in rows carry no paper values.')),
        Claim(
            text='lvfRNN, expRNN < euRNN, fcuRNN, scoRNN, TIMIT validation MSE',
            quote=QUOTE_2,
            section='5.2 TIMIT speech task (the sentence is split by Tables 2-3 in the text)',
            metric='val_loss',
            better=('timit-lvf', 'timit-exprnn'),
            than=('timit-eurnn', 'timit-fcurnn', 'timit-scornn'),
            remark=('Holds in print; the smallest gap is lvfRNN vs scoRNN (6.15 vs 7.36 test, '
                    '6.46 vs 7.97 val). The text makes no claim between lvfRNN and expRNN; in '
                    'print expRNN is better (5.48 vs 6.15 test, 5.52 vs 6.46 val), which the '
                    "abstract's generic 'comparable or better results' glosses over. The FSDD "
                    'stand-in rows carry no paper values.')),
    ),
    't3': (
        Claim(
            text='lvfRNN < RNN, uRNN, euRNN, fcuRNN, expRNN, nnRNN, JSB test NLL',
            quote=QUOTE_3,
            section='5.3 Polyphonic music task',
            metric='test_loss',
            better=('jsb-lvf',),
            than=('jsb-rnn', 'jsb-urnn', 'jsb-eurnn', 'jsb-fcurnn', 'jsb-exprnn', 'jsb-nnrnn'),
            remark=("'1vfRNN' is the text's OCR of lvfRNN. Row jsb-lvf stands for the cell; "
                    'alternative: jsb-lvf-literal. 8.36 vs 8.53 (expRNN) is the smallest gap. '
                    "Also Section 5's 'attains the best results' sentence.")),
        Claim(
            text='lvfRNN < RNN, uRNN, euRNN, fcuRNN, expRNN, MuseData test NLL (per-piece mean)',
            quote=QUOTE_3,
            section='5.3 Polyphonic music task',
            metric='test_nll_per_sequence',
            better=('musedata-lvf',),
            than=('musedata-rnn', 'musedata-urnn', 'musedata-eurnn', 'musedata-fcurnn',
                  'musedata-exprnn'),
            remark='6.19 vs 6.39 (RNN) is the smallest gap here.'),
        Claim(
            text='lvfRNN < nnRNN, MuseData test NLL (per-piece mean)',
            quote=QUOTE_3,
            section='5.3 Polyphonic music task',
            metric='test_nll_per_sequence',
            better=('musedata-lvf',),
            than=('musedata-nnrnn',),
            remark=('Split off because the printed gap is 0.01 (6.19 vs 6.2): the order holds '
                    "but 'significantly better' is not supported by the printed numbers; a "
                    'check with any tolerance would call these two comparable.')),
    ),
    't4': (
        Claim(
            text='lvfRNN ~ uRNN, euRNN, fcuRNN, expRNN, nnRNN (comparable), copy test accuracy',
            quote=QUOTE_4,
            section='E Results for the Copy task',
            metric='test_accuracy',
            better=('copy-lvf',),
            than=('copy-urnn', 'copy-eurnn', 'copy-fcurnn', 'copy-exprnn', 'copy-nnrnn'),
            kind='comparable',
            printed_holds=False,
            remark=("Row copy-lvf stands for the 'Ours' cell; alternatives running the same "
                    'cell: copy-lvf-divfree, copy-lvf-literal, copy-lvf-20k, copy-lvf-separate, '
                    'copy-lvf-separate-rates, copy-lvf-hard, copy-lvf-hard-vf3e-4. Printed 95% '
                    'vs 99-100%: comparable only for a tolerance of at least 5 points. The next '
                    "sentence (expRNN 100% vs 95%) is recorded as a separate 'better' claim. "
                    "'Unitary RNNs' taken as every model but the vanilla RNN.")),
        Claim(
            text='uRNN, euRNN, fcuRNN, expRNN, nnRNN < lvfRNN, copy test cross entropy',
            quote=QUOTE_4,
            section='E Results for the Copy task',
            metric='test_loss',
            better=('copy-urnn', 'copy-eurnn', 'copy-fcurnn', 'copy-exprnn', 'copy-nnrnn'),
            than=('copy-lvf',),
            remark=("Row copy-lvf stands for the 'Ours' cell; alternatives running the same "
                    'cell: copy-lvf-divfree, copy-lvf-literal, copy-lvf-20k, copy-lvf-separate, '
                    "copy-lvf-separate-rates, copy-lvf-hard, copy-lvf-hard-vf3e-4. 'a loss "
                    "value which is relatively high' = lvfRNN's loss (2.1e-2) is above every "
                    "other unitary model's (at most 3.5e-3); it is still below the vanilla "
                    "RNN's 9.5e-2, which the sentence does not compare.")),
        Claim(
            text='expRNN < lvfRNN, copy test accuracy',
            quote=('Specifically, our model attains $\\approx 95\\%$ , whereas expRNN yields '
                   '100% accuracy.'),
            section='E Results for the Copy task',
            metric='test_accuracy',
            better=('copy-exprnn',),
            than=('copy-lvf',),
            remark=("Row copy-lvf stands for the 'Ours' cell; alternatives running the same "
                    'cell: copy-lvf-divfree, copy-lvf-literal, copy-lvf-20k, copy-lvf-separate, '
                    'copy-lvf-separate-rates, copy-lvf-hard, copy-lvf-hard-vf3e-4. 100% vs 95%.')),
        Claim(
            text='uRNN, euRNN, fcuRNN, expRNN, nnRNN, lvfRNN < RNN, copy test accuracy',
            quote=('In comparison, a vanilla RNN fails on the copy task, and it obtains '
                   '$\\approx 16\\%$ ; this result is consistent with previous studies, e.g., '
                   '[2].'),
            section='E Results for the Copy task',
            metric='test_accuracy',
            better=('copy-urnn', 'copy-eurnn', 'copy-fcurnn', 'copy-exprnn', 'copy-nnrnn',
                    'copy-lvf'),
            than=('copy-rnn',),
            remark=("Row copy-lvf stands for the 'Ours' cell; alternatives running the same "
                    'cell: copy-lvf-divfree, copy-lvf-literal, copy-lvf-20k, copy-lvf-separate, '
                    'copy-lvf-separate-rates, copy-lvf-hard, copy-lvf-hard-vf3e-4. RNN 16% vs '
                    "at least 95%. The RNN's loss (9.5e-2) is also the worst and equals the "
                    'memoryless baseline, but the sentence quotes accuracy.')),
    ),
}
TABLES = {k: dataclasses.replace(t, claims=CLAIMS.get(k, ())) for k, t in TABLES.items()}
