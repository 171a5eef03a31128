"""Whole-repository models: import graph, kernel linkage, call graph, layout model.

Importing the package registers the ``[tool.foxaudit.program]`` keys with ``foxaudit.config``
(the engine imports it before validating that table).
"""

from foxaudit.program import settings as _settings  # noqa: F401  (registers the program keys)
