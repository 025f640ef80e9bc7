"""``python -m geoprobe.cli``: the ``geoprobe`` command."""

from geoprobe.cli import main

main()
