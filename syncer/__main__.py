"""`python -m syncer ...` is the same as the `runtimeclass-syncer` console script."""

from syncer.cli import main

raise SystemExit(main())
