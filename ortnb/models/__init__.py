"""A user's model, before, during and after a run: which one, does it fit the data, are its weights whole, what
does the trained one say.

- ``builtin``: the built-in models (minilm, smollm2, tiny-bert, tiny-llama) and ``load_model``, the one way ortnb
  loads a model (built-in, local folder or Hub id) with a classifier's head sized for the data's classes;
- ``checks``: a look at the model before a run (does its head fit the classes, does its tokenizer tokenize
  and pad);
- ``weights``: a saved model's weight files read by their headers (whole or cut, fit to its config.json);
- ``predict``: a trained run's model in the kernel (labels and probabilities, a continuation).

It sits above ``data/`` (``checks.Labels`` sizes a head) and below everything that trains or shows a run: it
imports nothing of ui/, runner/, tuning/, edge/, profiling/ or views/ (tests/data/test_data_models_layer.py).
Importing it stays light: transformers and torch are imported inside the functions that need them.
"""
