"""`python -m geoprobe …` is the `geoprobe` command."""

from geoprobe.cli import main

main()
