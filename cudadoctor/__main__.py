"""``python -m cudadoctor``: the same entry point as the ``cudadoctor`` command."""

from cudadoctor.cli import main

if __name__ == "__main__":
    main()
