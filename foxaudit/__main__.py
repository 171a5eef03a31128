"""``python -m foxaudit`` runs the command line."""

from foxaudit.cli import main

raise SystemExit(main())
