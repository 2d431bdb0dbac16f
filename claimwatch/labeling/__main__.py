"""``python -m claimwatch.labeling ARGS``: ``claimwatch label ARGS`` without the top-level command."""

from claimwatch.labeling.cli import main

raise SystemExit(main())
