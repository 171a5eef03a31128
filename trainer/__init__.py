"""trainer — a GPU-resident distributional DQN trainer for trading.

Layers (import downward only, checked by import-linter):
cli → train → model / losses / env / data / eval → ops → layout.
The runtime imports torch and numpy; CuPy only on the GPU path.
"""

__version__ = "0.1.0"
