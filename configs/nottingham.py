"""Nottingham (Boulanger-Lewandowski et al. 2012, arXiv:1206.6392):
``--config=configs/nottingham.py:<model>``.

As ``configs/jsb.py`` (frame NLL of 88-note piano-rolls, one sequence per update, 100
epochs). The papers' tables do not cover Nottingham: every model uses its JSB settings
(lvfRNN Table 5's JSB row; other models one layer at the 368,338-parameter budget).
"""

from lvf_jax.train.presets import dataset_config

DATASET = "nottingham"
STEPS_PER_EPOCH = 694  # 694 training pieces, one per update
OPTIONS = dict(pad_multiple=32, max_len=None, in_memory=True, data_dir=None, tfds_dir=None,
               max_train_examples=None, max_eval_examples=None)
TRAIN = dict(steps=100 * STEPS_PER_EPOCH,  # 100 epochs
             batch_size=1,  # TCN reference code (Bai et al. 2018); the lvfRNN paper gives none
             eval_batch_size=16, eval_every=STEPS_PER_EPOCH, checkpoint_every=STEPS_PER_EPOCH,
             log_every=STEPS_PER_EPOCH)
# lvfRNN Table 5's JSB row (no Nottingham row): clip 15, lr decay 0.5 (when: every 20
# epochs here)
SCHEDULE = dict(clip_norm=15.0, lr_schedule="step", lr_decay=0.5,
                lr_decay_steps=20 * STEPS_PER_EPOCH)

# Models not in the lvfRNN's music tables: one layer at the lvfRNN's budget of 368,338
# parameters (lvf_jax.models.hidden_for_budget, 88 inputs and outputs).
PRESETS = {
    "exprnn": dict(hidden=699,
                   cell=dict(orthogonal_init="cayley"),  # expRNN: Cayley init (lr_orth: lr / 10)
                   optim=dict(optimizer="adam", learning_rate=1e-3, **SCHEDULE)),
    "scornn": dict(hidden=699,
                   cell=dict(rho=69),  # scoRNN: rho = n // 10
                   optim=dict(optimizer="adam", learning_rate=1e-3, **SCHEDULE)),
    # NC-GRU Alg. 1: rho = n // 10, exact every 50
    "ncgru": dict(hidden=319,
                  cell=dict(rho=31, orthogonal_param="matrix"),
                  optim=dict(optimizer="adam", learning_rate=1e-3,
                             orthogonal_method="neumann_cayley", reset_every=50, **SCHEDULE)),
    "antisymmetric": dict(hidden=699,
                          cell=dict(epsilon=0.1, gamma=0.01),  # AntisymmetricRNN Sec. 5
                          optim=dict(optimizer="adam", learning_rate=1e-3, **SCHEDULE)),
    "gated_antisymmetric": dict(hidden=632,
                                cell=dict(epsilon=0.1, gamma=0.01),  # AntisymmetricRNN Sec. 5
                                optim=dict(optimizer="adam", learning_rate=1e-3, **SCHEDULE)),
    # nnRNN copy set-up
    "nnrnn": dict(hidden=524,
                  cell=dict(orthogonal_init="cayley", delta=1e-4, t_decay=1e-6),
                  optim=dict(optimizer="adam", learning_rate=1e-3, **SCHEDULE)),
    "rnn": dict(hidden=524,
                optim=dict(optimizer="adam", learning_rate=1e-3, **SCHEDULE)),
    "rnn_orth": dict(hidden=524,
                     optim=dict(optimizer="adam", learning_rate=1e-3, **SCHEDULE)),
    "lstm": dict(hidden=252,
                 optim=dict(optimizer="adam", learning_rate=1e-3, **SCHEDULE)),
    "gru": dict(hidden=296,
                optim=dict(optimizer="adam", learning_rate=1e-3, **SCHEDULE)),
    "urnn": dict(hidden=1022,
                 cell=dict(factored=True),  # the factors applied each step
                 optim=dict(optimizer="adam", learning_rate=1e-3, **SCHEDULE)),
    "eurnn": dict(hidden=1034,
                  cell=dict(capacity=2, factored=True),  # capacity 2; the factors applied each step
                  optim=dict(optimizer="adam", learning_rate=1e-3, **SCHEDULE)),
    "fcurnn": dict(hidden=455,
                   optim=dict(optimizer="adam", learning_rate=1e-3, **SCHEDULE)),
    # lvfRNN Table 5, JSB, as printed
    "lvf_literal": dict(model="lvf", hidden=300, num_layers=3, dropout=0.3,
                        cell=dict(parametrization="paper",  # lvfRNN eq. 8's V, as the rates assume
                                  integrator="euler", tau=1.0, activation="tanh", div_penalty=0.0),
                        optim=dict(optimizer="adam", learning_rate=1.5e-3, **SCHEDULE)),
    # lvfRNN Table 5, JSB; V at 1e-4 (configs/jsb.py)
    "lvf": dict(model="lvf", hidden=300, num_layers=3, dropout=0.3,
                cell=dict(parametrization="paper",  # lvfRNN eq. 8's V, as the rates assume
                          integrator="euler", tau=1.0, activation="tanh", div_penalty=0.0),
                optim=dict(optimizer="adam", learning_rate=1.5e-3, lr_vector_field=1e-4,
                           **SCHEDULE)),
}


def get_config(model: str = "lvf"):
  return dataset_config(DATASET, model, PRESETS, options=OPTIONS, train=TRAIN)
