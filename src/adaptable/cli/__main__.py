"""``python -m adaptable.cli``: the same as the ``adaptable`` command."""

import sys

from adaptable.cli import main

if __name__ == "__main__":
    sys.exit(main())
