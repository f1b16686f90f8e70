"""A node's compared values and findings as a Node Feature Discovery feature file, for node labels.

NFD's local feature source reads ``/etc/kubernetes/node-feature-discovery/features.d/*``: one ``name=value``
a line, ``# +expiry-time=…`` to drop the labels of a file nobody refreshes, files whose name starts with a
dot ignored (so a writer renames a finished file into place)
(https://kubernetes-sigs.github.io/node-feature-discovery/v0.16/usage/customization-guide.html#local-feature-source).
Labels are under ``cudadoctor.feature.node.kubernetes.io/``, a sub-namespace NFD allows without
``-extra-label-ns``. A label value is at most 63 characters of ``[A-Za-z0-9._-]``, starting and ending
alphanumeric (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set):
``2.11.0+cu130`` is written ``2.11.0_cu130``, ``NVIDIA H200`` ``NVIDIA-H200``.

    python -m cudadoctor.compare.nfd report.json [--expires-in SECONDS] > features.d/.cudadoctor && mv …
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
from collections.abc import Mapping, Sequence

__all__ = ["PREFIX", "feature_file", "label_value"]

PREFIX = "cudadoctor.feature.node.kubernetes.io/"
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9._-]")
_EDGE = re.compile(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$")
#: "2.28.9 (pip)" -> version, origin
_COPY = re.compile(r"^(?P<version>\S+) \((?P<origin>[^)]*)\)$")


def label_value(text: str) -> str:
    """``text`` as a valid label value: ``+`` -> ``_``, other characters not allowed -> ``-``, 63 at most."""
    value = _NOT_ALLOWED.sub("-", text.replace("+", "_"))
    return _EDGE.sub("", _EDGE.sub("", value)[:63])


def _labels(values: Mapping[str, str | None]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for key, value in values.items():
        if value is None:
            continue
        name = key.replace("_", "-")
        copy = _COPY.match(value) if key in ("nccl", "cudnn", "cublas") else None
        if copy:
            labels[name] = label_value(copy["version"])
            labels[f"{name}-origin"] = label_value(copy["origin"])
        else:
            labels[name] = label_value(value)
    return {k: v for k, v in labels.items() if v}


def feature_file(
    values: Mapping[str, str | None], findings: Mapping[str, str], *, expires: datetime.datetime | None = None
) -> str:
    """The feature file: the node's compared values, ``healthy``, and one ``cdNNN=fail|warn|…`` per problem.

    ``healthy`` is ``false`` when a finding failed or errored (what makes ``check`` exit 1), else ``true``.
    """
    lines = []
    if expires is not None:
        lines.append(f"# +expiry-time={expires.astimezone(datetime.timezone.utc):%Y-%m-%dT%H:%M:%SZ}")
    labels = _labels(values)
    labels["healthy"] = "false" if any(s in ("fail", "error") for s in findings.values()) else "true"
    labels.update({code.lower(): label_value(status) for code, status in sorted(findings.items())})
    lines += [f"{PREFIX}{name}={value}" for name, value in labels.items()]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    from cudadoctor.compare.load import load_nodes
    from cudadoctor.errors import UsageError

    parser = argparse.ArgumentParser(prog="python -m cudadoctor.compare.nfd", description=__doc__.splitlines()[0])
    parser.add_argument("report", help="a report (cudadoctor check -f json -o FILE) or a snapshot")
    parser.add_argument("--expires-in", type=int, default=0, metavar="SECONDS", help="labels expire after this")
    args = parser.parse_args(argv)
    try:
        (node,) = load_nodes([args.report])
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if node.problem is not None:  # no labels from a report the reader refused: it would read as healthy
        print(f"error: {args.report}: {node.problem}", file=sys.stderr)
        return 2
    now = datetime.datetime.now(datetime.timezone.utc)
    expires = now + datetime.timedelta(seconds=args.expires_in) if args.expires_in > 0 else None
    sys.stdout.write(feature_file(node.values, node.findings, expires=expires))
    return 0


if __name__ == "__main__":
    sys.exit(main())
