"""`python -m tf_input.cli`: the `tf-input` command."""

import sys

from tf_input.cli import main

if __name__ == "__main__":
    sys.exit(main())
