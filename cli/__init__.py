"""The ``pypto`` command (installed as the package ``pypto_cli``)."""
