"""`python -m tf_input.demo`: the demo (`tf-input demo`)."""

from tf_input.demo import main

if __name__ == "__main__":
    raise SystemExit(main())
