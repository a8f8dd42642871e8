"""The shipped training configs (``ml_collections``), one file per task or dataset.

Installed as ``lvf_jax.configs``; the command line finds a file here by name
(``lvf-jax --config=copy.py:lvf``) when the path given does not exist. Each file's
``get_config(model)`` returns the preset of ``model``; see ``configs/README.md``.
"""
