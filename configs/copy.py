"""Copy task (Arjovsky, Shah and Bengio 2016, arXiv:1511.06464):
``--config=configs/copy.py:<model>``.

Hyperparameters from the papers' tables:
* lvf: lvfRNN Table 5, Copy(200): kappa 128, modReLU, tau 15, midpoint map (App. E, eq 16),
  with the divergence of V free and four deviations, each decided by a run recorded in
  ``docs/LVF_DIVERGENCE.md``: the vector field at Adam 1e-5 (Adam's first step moves every
  entry of V by the learning rate and div V sums 2(kappa - 1) of them, which tau = 15 turns
  into a midpoint map of spectral radius above 1 over the 220 steps: Table 5 as printed, the
  row ``copy-lvf-literal``); the soft divergence penalty of Sec. 4.3 at lambda 10
  (Table 5: 0); gradients clipped at global norm 1; the other weights at Adam 1e-3 with a
  cosine decay over the 10k steps (Table 5: 1e-4, no decay).
* lvf_divfree: the hard constraint div V = 0 of Sec. 4.3, which makes the midpoint map
  orthogonal (Thm. 1): the lvfRNN's orthogonal special case. Adam 3e-4 for 20k steps
  (twice the other copy rows' budget: the row ``copy-lvf-divfree`` of
  ``docs/reproduction/lvf-t4.md``).
* lvf_separate: lvfRNN Table 5, Copy(200), its divergence free to move, with the field
  parametrised by its divergence-free part and its divergence (``separate_divergence``),
  each at its own Adam rate: the divergence-free part at 3e-4, the divergence at 1e-5 (one
  step moves each (div V)_i by about 1e-5), the other weights at 3e-4 as ``lvf_divfree``,
  with a cosine decay over the 10k steps (``lvf_divfree`` at a constant 3e-4 lost its memory
  after its best step) and the penalty at lambda 10 as ``lvf``. Decided by the controls in
  ``docs/LVF_DIVERGENCE.md`` and the rows ``copy-lvf-hard`` and ``copy-lvf-hard-vf3e-4`` of
  ``docs/reproduction/lvf-t4.md`` (``lvf``'s settings with div V = 0 imposed, from their
  records).
* lvf_literal: Table 5 exactly as printed (the row ``copy-lvf-literal``).
* exprnn, nnrnn, lstm, rnn_orth, rnn: nnRNN Table 2 (T=200, batch 10, RMSprop); expRNN
  (n 128, Henaff, lr 1e-3, lr_orth 1e-4).
* scornn, ncgru, gru: NC-GRU Sec. 4.4 (T=1000/2000, batch 50, Adam 1e-3, A at 1e-4;
  scoRNN n 190 rho 95, NC-GRU n 96 rho 80 with Neumann resets every 20 steps, GRU 78).
* antisymmetric: not in the copy tables; AntisymmetricRNN defaults (eps 0.1, gamma 0.01).
* urnn, eurnn: lvfRNN Table 4 (copy, hidden 128 for every model); RMSprop 1e-3 as the uRNN
  paper (complex EURNN of capacity 2, the reference code's default).
* fcurnn: lvfRNN Table 4 (hidden 128); the full-capacity uRNN reference's memory-task run
  (RMSprop lr 1e-3 with decay 0.9, the multiplicative Cayley step of the unitary ``W`` at the
  same lr on the raw gradient).
* goru: NC-GRU Sec. 4.4 (n 100, Adam 1e-3).
Override anything from the command line, e.g. ``--config.task.options.T=1000``.
"""

from lvf_jax.train.presets import preset_config

TASK = "copy"
OPTIONS = dict(T=200)  # Arjovsky et al. 2016; lvfRNN Table 4
TRAIN = dict(steps=10000, batch_size=50)  # NC-GRU Sec. 4.4: batch 50

PRESETS = {
    # lvfRNN Table 5, Copy(200), its divergence unconstrained; four deviations (above)
    "lvf": dict(hidden=128,
                cell=dict(parametrization="paper",  # lvfRNN eq. 8's V, as the rates assume
                          integrator="midpoint", tau=15.0, activation="modrelu", div_penalty=10.0),
                optim=dict(optimizer="adam", learning_rate=1e-3, lr_vector_field=1e-5,
                           clip_norm=1.0, lr_schedule="cosine")),
    # Sec. 4.3's hard constraint div V = 0: the orthogonal special case
    "lvf_divfree": dict(model="lvf", hidden=128,
                        cell=dict(parametrization="paper",  # lvfRNN eq. 8's V, as the rates assume
                                  integrator="midpoint", tau=15.0, activation="modrelu",
                                  divergence_free=True),
                        optim=dict(optimizer="adam", learning_rate=3e-4, lr_vector_field=3e-4),
                        train=dict(steps=20000)),
    # lvfRNN Table 5, Copy(200), divergence free to move at its own rate (above)
    "lvf_separate": dict(model="lvf", hidden=128,
                         cell=dict(parametrization="paper",  # lvfRNN eq. 8's V, as the rates assume
                                   integrator="midpoint", tau=15.0, activation="modrelu",
                                   div_penalty=10.0, separate_divergence=True),
                         optim=dict(optimizer="adam", learning_rate=3e-4, lr_vector_field=3e-4,
                                    lr_divergence=1e-5, lr_schedule="cosine")),
    # lvfRNN Table 5, Copy(200), as printed
    "lvf_literal": dict(model="lvf", hidden=128,
                        cell=dict(parametrization="paper",  # lvfRNN eq. 8's V, as the rates assume
                                  integrator="midpoint", tau=15.0, activation="modrelu"),
                        optim=dict(optimizer="adam", learning_rate=1e-4, lr_vector_field=1e-4)),
    # nnRNN Table 2 (batch 10, RMSprop); expRNN n 128, lr 1e-3, lr_orth 1e-4
    "exprnn": dict(hidden=128,
                   cell=dict(orthogonal_init="henaff"),
                   optim=dict(optimizer="rmsprop", learning_rate=1e-3, lr_orth=1e-4),
                   train=dict(batch_size=10)),
    # nnRNN Table 2 (batch 10, RMSprop)
    "nnrnn": dict(hidden=128,
                  cell=dict(orthogonal_init="henaff", delta=1e-4, t_decay=1e-6),
                  optim=dict(optimizer="rmsprop", learning_rate=5e-4, lr_orth=1e-6),
                  train=dict(batch_size=10)),
    # nnRNN Table 2 (batch 10, RMSprop)
    "lstm": dict(hidden=128,
                 optim=dict(optimizer="rmsprop", learning_rate=5e-4),
                 train=dict(batch_size=10)),
    # nnRNN Table 2 (batch 10, RMSprop)
    "rnn_orth": dict(hidden=128,
                     optim=dict(optimizer="rmsprop", learning_rate=2e-4),
                     train=dict(batch_size=10)),
    # nnRNN Table 2 (batch 10, RMSprop)
    "rnn": dict(hidden=128,
                optim=dict(optimizer="rmsprop", learning_rate=1e-3, rmsprop_decay=0.9),
                train=dict(batch_size=10)),
    # NC-GRU Sec. 4.4: n 190, rho 95, Adam 1e-3, A at 1e-4
    "scornn": dict(hidden=190,
                   cell=dict(rho=95),
                   optim=dict(optimizer="adam", learning_rate=1e-3, lr_orth=1e-4)),
    # NC-GRU Sec. 4.4: n 96, rho 80, Neumann resets every 20
    "ncgru": dict(hidden=96,
                  cell=dict(rho=80, orthogonal_param="matrix", orthogonal_reset=False),
                  optim=dict(optimizer="adam", learning_rate=1e-3, lr_orth=1e-4,
                             orthogonal_method="neumann_cayley", reset_every=20)),
    # NC-GRU Sec. 4.4: n 78
    "gru": dict(hidden=78,
                optim=dict(optimizer="adam", learning_rate=1e-3)),
    # not in the copy tables
    "antisymmetric": dict(hidden=128,
                          cell=dict(epsilon=0.1, gamma=0.01),  # AntisymmetricRNN Sec. 5
                          optim=dict(optimizer="adam", learning_rate=1e-3)),
    # not in the copy tables
    "gated_antisymmetric": dict(hidden=128,
                                cell=dict(epsilon=0.1, gamma=0.01),  # AntisymmetricRNN Sec. 5
                                optim=dict(optimizer="adam", learning_rate=1e-3)),
    # lvfRNN Table 4: n 128; RMSprop 1e-3 (uRNN paper)
    "urnn": dict(hidden=128,
                 optim=dict(optimizer="rmsprop", learning_rate=1e-3)),
    # lvfRNN Table 4: n 128; RMSprop 1e-3
    "eurnn": dict(hidden=128,
                  cell=dict(capacity=2),  # EUNN capacity 2
                  optim=dict(optimizer="rmsprop", learning_rate=1e-3)),
    # lvfRNN Table 4: n 128; the full-capacity uRNN reference's memory task
    "fcurnn": dict(hidden=128,
                   optim=dict(optimizer="rmsprop", learning_rate=1e-3, rmsprop_decay=0.9,
                              lr_orth=1e-3)),
    # NC-GRU Sec. 4.4: n 100
    "goru": dict(hidden=100,
                 optim=dict(optimizer="adam", learning_rate=1e-3)),
}


def get_config(model: str = "exprnn"):
  return preset_config(TASK, model, PRESETS, options=OPTIONS, train=TRAIN)
