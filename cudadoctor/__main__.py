"""``python -m cudadoctor``: the same entry point as the ``cudadoctor`` command."""

from cudadoctor.entry import main

if __name__ == "__main__":
    main()
