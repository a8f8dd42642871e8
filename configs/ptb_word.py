"""Word-level Penn Treebank (Marcus et al. 1993, the Mikolov splits):
``--config=configs/ptb_word.py:<model>``.

Mikolov's ``ptb.{train,valid,test}.txt`` (10k vocabulary), a 400-dimensional token embedding,
next-word logits, truncated BPTT with the hidden state carried across batches (reset every
epoch). Metric: perplexity (``perplexity`` in the evaluation records). The papers give no
batch / truncation for PTB-word: batch 64 rows, BPTT 70 (AWD-LSTM's), 40 epochs, evaluation
every epoch over the whole split (32 rows).

Hyperparameters: ncgru: NC-GRU PTB-word (Mucllari et al. 2022, Sec. 4.5), 3 layers 400 / 1150 /
400, Adam 5e-4, rho 50, and its three dropouts: 0.4 "after the NC-GRU cell" (between the layers,
``model.dropout``), 0.4 on the embedding layer (``model.input_dropout``) and 0.25 on the output
(before the head, ``model.output_dropout``). The paper names them in the words of the AWD-LSTM
code it ran, whose PTB-word command uses dropouti 0.4 (embedding), dropout 0.4 (before the
decoder) and dropouth 0.25 (between layers): the paper's text is followed here. AWD-LSTM's
dropouts are variational (one mask for the whole sequence); lvf_jax draws a mask per step.

Every other model: one layer at the parameter budget of that NC-GRU
(15,361,125 effective parameters with the embedding and the 10k-way head,
``hidden_for_budget``), Adam 1e-3, clip 0.25 (AWD-LSTM's).
"""

from lvf_jax.train.presets import dataset_config

DATASET = "ptb_word"
CHUNKS_PER_EPOCH = 208  # ceil(ceil(929,588 targets / 64 rows) / 70)
OPTIONS = dict(bptt=70,  # AWD-LSTM's (the papers give none)
               embed_dim=400, data_dir=None, tfds_dir=None, max_train_tokens=None,
               max_eval_tokens=None)
TRAIN = dict(steps=40 * CHUNKS_PER_EPOCH,  # 40 epochs
             batch_size=64, eval_batch_size=32, eval_every=CHUNKS_PER_EPOCH,
             checkpoint_every=CHUNKS_PER_EPOCH, log_every=50)
BASELINE = dict(optimizer="adam", learning_rate=1e-3, clip_norm=0.25)  # AWD-LSTM's clip

# Models but the NC-GRU: one layer at the NC-GRU's budget of 15,361,125 parameters
# (with the embedding and the 10k-way head; hidden_for_budget).
PRESETS = {
    # lvfRNN Table 5's most common row
    "lvf": dict(hidden=1039,
                cell=dict(parametrization="paper",  # lvfRNN eq. 8's V, as the rates assume
                          integrator="euler", tau=1.0, activation="tanh"),
                optim=BASELINE),
    "exprnn": dict(hidden=1039,
                   cell=dict(orthogonal_init="cayley"),  # expRNN: Cayley init (lr_orth: lr / 10)
                   optim=BASELINE),
    "scornn": dict(hidden=1039,
                   cell=dict(rho=103),  # scoRNN: rho = n // 10
                   optim=BASELINE),
    "antisymmetric": dict(hidden=1039,
                          cell=dict(epsilon=0.1, gamma=0.01),  # AntisymmetricRNN Sec. 5
                          optim=BASELINE),
    "gated_antisymmetric": dict(hidden=1004,
                                cell=dict(epsilon=0.1, gamma=0.01),  # AntisymmetricRNN Sec. 5
                                optim=BASELINE),
    # nnRNN copy set-up
    "nnrnn": dict(hidden=994,
                  cell=dict(orthogonal_init="cayley", delta=1e-4, t_decay=1e-6),
                  optim=BASELINE),
    "rnn": dict(hidden=995,
                optim=BASELINE),
    "rnn_orth": dict(hidden=995,
                     optim=BASELINE),
    "lstm": dict(hidden=772,
                 optim=BASELINE),
    "gru": dict(hidden=829,
                optim=BASELINE),
    # NC-GRU Sec. 4.5: 400 / 1150 / 400, Adam 5e-4, rho 50, its three dropouts
    "ncgru": dict(hidden=(400, 1150, 400), dropout=0.4, input_dropout=0.4, output_dropout=0.25,
                  cell=dict(rho=50, orthogonal_param="matrix"),
                  optim=dict(optimizer="adam", learning_rate=5e-4,
                             orthogonal_method="neumann_cayley", reset_every=50)),
}


def get_config(model: str = "ncgru"):
  return dataset_config(DATASET, model, PRESETS, options=OPTIONS, train=TRAIN)
