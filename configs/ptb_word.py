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

from lvf_jax.train.presets import dataset_config, default_preset

DATASET = "ptb_word"
EPOCHS, BATCH, BPTT = 40, 64, 70
CHUNKS_PER_EPOCH = 208  # ceil(ceil(929,588 targets / 64 rows) / 70)

MATCHED = dict(lvf=1039, exprnn=1039, scornn=1039, antisymmetric=1039, gated_antisymmetric=1004,
               nnrnn=994, rnn=995, rnn_orth=995, lstm=772, gru=829)

OPTIONS = dict(bptt=BPTT, embed_dim=400, data_dir=None, tfds_dir=None, max_train_tokens=None,
               max_eval_tokens=None)
TRAIN = dict(steps=EPOCHS * CHUNKS_PER_EPOCH, batch_size=BATCH, eval_batch_size=32,
             eval_every=CHUNKS_PER_EPOCH, checkpoint_every=CHUNKS_PER_EPOCH, log_every=50)

PRESETS = {name: default_preset(name, n, clip_norm=0.25) for name, n in MATCHED.items()}
PRESETS["ncgru"] = dict(default_preset("ncgru", (400, 1150, 400), learning_rate=5e-4),
                       dropout=0.4, input_dropout=0.4, output_dropout=0.25)
PRESETS["ncgru"]["cell"]["rho"] = PRESETS["ncgru"]["optim"]["rho"] = 50


def get_config(model: str = "ncgru"):
  return dataset_config(DATASET, model, PRESETS, options=OPTIONS, train=TRAIN)
