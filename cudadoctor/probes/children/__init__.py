"""The programs ``check --deep`` runs in child interpreters of the target Python; never imported here.

Each module is run by file path, ``<python> -I <this directory>/<child>.py args…``, by
:mod:`cudadoctor.probes.runtime`: the target interpreter need not have cudadoctor installed, and
``-I`` keeps the user's current directory, ``PYTHONPATH`` and user site from shadowing what is
examined. So each child is self-contained: standard library only (plus :mod:`importlib` for the
framework it tries), it never imports cudadoctor nor a sibling, and the few lines of the result
protocol (``stage``, ``mapped``, ``emit``, ``one_line``, ``add_sites``) are repeated in each child;
tests/probes/test_children.py holds the copies identical and the markers equal to the parent's.

* :mod:`driver_api`: ctypes on ``libcuda.so.1`` (no framework);
* :mod:`framework`: imports one framework and runs one tiny GPU operation;
* :mod:`nccl`: one rank of an NCCL all-reduce through ``torch.distributed``.
"""
