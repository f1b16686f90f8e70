"""``python -m cudadoctor``: the same entry point as the ``cudadoctor`` command."""

from cudadoctor.entry import run

if __name__ == "__main__":
    run()
