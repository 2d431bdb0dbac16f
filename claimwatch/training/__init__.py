"""Training the ``verifier`` judge: data generation (``data``), fine-tuning (``train``), int8 storage (``compress``).

Needs torch and transformers (the ``verifier`` extra) for ``train``; ``data`` is pure Python.
"""
