"""``cudadoctor compare``: find the node that differs, across the snapshots or reports of a cluster.

- :mod:`.values`: the facts compared, read straight from each document's JSON (no full decode, so
  10,000 node reports stay fast), and the policy of each (must match, same branch, pool key);
- :mod:`.judge`: nodes split into pools by the pool keys, each fact judged against a baseline or the
  majority of its pool;
- :mod:`.fold`: node names folded the way Slurm writes them (``gpu[001-097,099]``);
- :mod:`.render`: text, JSON and Markdown.
"""
