"""Every option and argument of the command line, declared once, as plain data (pip's ``cmdoptions`` in spirit).

Two parsers read these declarations: typer, through :func:`cudadoctor.cli.typer_parameters` (the only place a
``typer.Option`` is made), and the typer-free fast path of :mod:`cudadoctor.entry`, which parses the common forms
of ``check`` and ``suggest`` itself. Importing this module imports neither typer nor anything of the checks: it is
read before the fast path starts NVML's helper. An option that means the same in several commands is one
declaration; where a command words it differently or takes other values, :meth:`Param.but` changes its help,
metavar, values or default, never its flags (``tests/test_cli_options.py`` holds both rules).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from cudadoctor.record import record
from cudadoctor.report import Format
from cudadoctor.terminal import ColorMode

__all__ = [
    "CHECK",
    "COLOR",
    "COMMANDS",
    "COMPLETE_VAR",
    "GLOBAL",
    "HELP_FLAGS",
    "NOT_TAKEN_BY_WHY",
    "NO_COLOR",
    "SUGGEST_PLAN_FORMATS",
    "Kind",
    "Param",
]

#: What a parameter holds: a flag (True when given), a text, texts (the option repeated, or the argument given
#: several times), a whole number, a number, or one of ``choices``.
Kind = Literal["flag", "text", "texts", "int", "float", "choice"]


@record
class Param:
    """One option (``flags`` given) or positional argument (no ``flags``) of a command."""

    dest: str  #: its name in the command's body (and a field of CheckOptions for check's)
    flags: tuple[str, ...]  #: the option's names, as --help lists them; () for an argument
    help: str
    kind: Kind = "text"
    metavar: str | None = None  #: what --help shows for the value (typer's default where None)
    choices: tuple[str, ...] = ()  #: the values a "choice" takes
    default: Any = None  #: the value when not given (False for a flag)
    required: bool = False  #: an argument that must be given

    def but(self, **changes: Any) -> Param:
        """This parameter as another command has it: other help, metavar, values, default or name in the body."""
        if "flags" in changes:
            raise ValueError(f"{self.flags}: a flag is declared once; declare a new Param for new flags")
        return dataclasses.replace(self, **changes)


def _flag(dest: str, flags: tuple[str, ...], help: str) -> Param:
    return Param(dest, flags, help, kind="flag", default=False)


# --- what a command examines: this machine, an image root, or a snapshot ---------------------------------------

FROM = Param("from_file", ("--from",), "Evaluate a saved snapshot (or JSON report) instead of probing.", metavar="FILE")
ROOT = Param(
    "root",
    ("--root",),
    "Read every file-based fact from an extracted image root instead of /. Nothing in it is run, and none of this "
    "host's facts are used.",
    metavar="DIR",
)
ENV_FILE = Param(
    "env_file", ("--env-file",), "The image's environment, as KEY=VALUE lines (docker style).", metavar="FILE"
)
PYTHON = Param(
    "python",
    ("--python",),
    "The interpreter whose packages to examine. Default: the active virtualenv or conda env, else the interpreter "
    "running cudadoctor (unless that is a pipx/uv tool install).",
    metavar="PATH",
)
DRIVER = Param(
    "assume_driver",
    ("--driver", "--assume-driver"),
    "The driver of the host this will run on (e.g. 550.54.15); overrides the probed driver. --assume-driver is the "
    "same option.",
    metavar="VERSION",
)
GPU = Param(
    "assume_gpu",
    ("--gpu", "--assume-gpu"),
    "A GPU of the target host: a model (H100, 'RTX 4090') or compute capability (8.9, sm_89). Repeat for several "
    "GPUs; overrides the probed GPUs. --assume-gpu is the same option.",
    kind="texts",
    metavar="NAME|CC",
)
ROOT_KIND = Param(
    "root_kind",
    ("--root-kind",),
    "What the examined root is, which decides the fixes: host (a machine's own system, or its disk mounted under "
    "--root: a driver that differs from the kernel module is mended by a reboot) or image (a container or an "
    "exported image: driver libraries baked into it are removed, the NVIDIA runtime mounts the host's). auto decides "
    "from markers (/.dockerenv, /run/.containerenv, cgroups, a kernel in /boot) and, when they are missing or "
    "disagree, gives a host's fixes, which delete nothing.",
    kind="choice",
    choices=("auto", "host", "image"),  # cudadoctor.assume.ROOT_KINDS (a test keeps them equal)
    default="auto",
)
NO_REDACT = _flag(
    "no_redact",
    ("--no-redact",),
    "Show paths under the home directory as they are instead of as ~ (for local debugging). Tokens, "
    "secret-looking environment values, credentials in URLs and GPU UUIDs stay masked.",
)

#: The options that say what check, snapshot and why examine, and how (in the order --help lists them).
EXAMINED = (ROOT, ENV_FILE, PYTHON, DRIVER, GPU, ROOT_KIND, NO_REDACT)

# --- output ------------------------------------------------------------------------------------------------

FORMAT = Param(
    "output_format",
    ("--format", "-f"),
    "text for people; json for tools (all facts with sources); github for workflow annotations; markdown for a bug "
    "report or PR comment; slurm, npd (one line) and health-json for schedulers: the node's GPU health verdict, "
    "exit 0 ok, 1 problem, 2 could not judge.",
    kind="choice",
    choices=tuple(f.value for f in Format),
    default=Format.TEXT.value,
)
VERBOSE = _flag("verbose", ("--verbose", "-v"), "Show every fact and where it was read.")
OUTPUT = Param(
    "output",
    ("--output", "-o"),
    "Write the report (in --format) to FILE; the terminal gets the summary.",
    metavar="FILE",
)

# --- check ----------------------------------------------------------------------------------------------------

CHECK: tuple[Param, ...] = (
    FORMAT,
    VERBOSE,
    FROM,
    *EXAMINED,
    Param(
        "select",
        ("--select",),
        "Run only these checks: a code (CD102), a prefix (CD1) or a name.",
        kind="texts",
        metavar="CODE",
    ),
    Param("ignore", ("--ignore",), "Skip these checks: a code, a prefix or a name. Repeatable.", "texts", "CODE"),
    Param(
        "require",
        ("--require",),
        "Assert something this job needs: a package ('torch>=2.6', 'vllm'), 'cuda>=12.4' (the CUDA version the "
        "driver supports) or 'driver>=550'. Repeatable; fails the run (CD901) when unmet.",
        kind="texts",
        metavar="REQ",
    ),
    Param(
        "fail_on",
        ("--fail-on",),
        "Exit 1 on: error (default), warning (errors and warnings) or never (report only).",
        metavar="LEVEL",
    ),
    _flag("strict", ("--strict",), "Same as --fail-on warning."),
    _flag(
        "fail_on_unknown",
        ("--fail-on-unknown",),
        "Also exit 1 when a check could not be judged (a fact unreadable, data missing): for CI gates that must not "
        "pass on what cudadoctor does not know.",
    ),
    OUTPUT,
    _flag(
        "deep",
        ("--deep",),
        "Also check at run time, in child processes of the target interpreter: cuInit and the devices, then each "
        "installed framework imported with one small GPU operation and the libraries it really loaded. Takes "
        "seconds; never imports a framework in cudadoctor's own process.",
    ),
    Param("timeout", ("--timeout",), "Time allowed to each --deep child process.", "float", "SECONDS", default=30.0),
    _flag(
        "nccl",
        ("--nccl",),
        "With --deep on a machine with two or more GPUs: run an NCCL all-reduce between one process per GPU (torch, "
        "over 127.0.0.1).",
    ),
    _flag(
        "no_health",
        ("--no-health",),
        "Skip the GPU hardware-health checks (CD150-CD199: NVML ECC, row remapping, Xids, throttling, PCIe, NVLink, "
        "NCCL host prerequisites).",
    ),
    Param(
        "dcgm_diag",
        ("--dcgm-diag",),
        "Also run NVIDIA DCGM's active diagnostic, dcgmi diag -r LEVEL (1: seconds of software checks; 2: adds memory "
        "and PCIe tests, about two minutes), through the running nv-hostengine, and report its verdict as CD167. "
        "Never run unless given.",
        kind="int",
        metavar="LEVEL",
    ),
    Param(
        "dcgm_timeout",
        ("--dcgm-timeout",),
        "Time allowed to dcgmi diag (default 90 s for level 1, 300 s for level 2).",
        kind="float",
        metavar="SECONDS",
    ),
)

SNAPSHOT = (
    OUTPUT.but(help="Write here instead of standard output."),
    *EXAMINED,
)

# --- why: check's options, less those that shape check's own output --------------------------------------------

#: check's parameters that ``why`` does not take: it has its own --format, and prints one answer.
NOT_TAKEN_BY_WHY = frozenset({"output_format", "output"})

WHY = (
    Param(
        "error",
        (),
        "The error text, quoted; several arguments are several lines.",
        kind="texts",
        metavar="[ERROR]...",
    ),
    Param("file", ("--file",), "Read the error from a log file; - reads standard input.", metavar="LOG"),
    FORMAT.but(
        dest="why_format", help="text for people; json for tools (with check's report).", choices=("text", "json")
    ),
    *(p for p in CHECK if p.dest not in NOT_TAKEN_BY_WHY),
)

# --- suggest --------------------------------------------------------------------------------------------------

#: suggest's formats of a plan (the fast path takes these); markdown is the --matrix table's alone.
SUGGEST_PLAN_FORMATS = ("text", "json", "commands", "dockerfile")

SUGGEST = (
    Param(
        "what",
        (),
        "What to install: torch, vllm, jax, tensorrt, tensorflow, cupy or onnxruntime-gpu, optionally with a "
        "requirement ('torch>=2.6', 'torch==2.13.0+cu126', 'vllm==0.30.0'); or driver, the NVIDIA driver branch "
        "for these GPUs.",
        metavar="[TARGET]",
    ),
    Param("target", ("--target", "-t"), "The same as the TARGET argument.", metavar="TARGET"),
    DRIVER.but(help="Plan for this driver (535.104.05) or branch (550)."),
    GPU.but(help="Plan for this GPU ('RTX 4090', sm_89, 8.9; MI300X, 'Apple M2'; none: no GPU); repeat for a fleet."),
    PYTHON.but(help="Plan for this Python version.", metavar="X.Y"),
    Param(
        "platform",
        ("--platform",),
        "linux-x86_64 (default), linux-aarch64, windows or macos-arm64.",
        metavar="PLATFORM",
    ),
    Param("cuda", ("--cuda",), "Never plan a build for a CUDA newer than this.", metavar="X.Y"),
    _flag("no_probe", ("--no-probe",), "Ignore this machine: plan only from the flags given."),
    FORMAT.but(
        help="text; json (every exclusion explained); commands (top plan's command only); dockerfile (FROM and RUN "
        "lines); markdown (--matrix only).",
        choices=(*SUGGEST_PLAN_FORMATS, "markdown"),
    ),
    VERBOSE.but(help="List every excluded candidate."),
    _flag(
        "matrix", ("--matrix",), "Every release x CUDA build of the target: fits, or why not (text, json, markdown)."
    ),
)

# --- the other commands ---------------------------------------------------------------------------------------

_LISTING = ("text", "json", "markdown")

USAGE = (
    Param(
        "sample",
        ("--sample",),
        "Measure GPM's SM activity and occupancy over this window (Hopper and newer); 0 reads only the driver's "
        "sample buffer.",
        kind="float",
        metavar="SECONDS",
        default=1.0,
    ),
    FORMAT.but(help="text or json.", choices=("text", "json")),
)

UPDATE = (
    Param(
        "packages",
        (),
        "Projects to refresh (default: torch, vllm, jax, the nvidia-* …).",
        kind="texts",
        metavar="[PACKAGE]...",
    ),
    Param(
        "index_url",
        ("--index-url",),
        "A PEP 503/691 simple index. Default: the one pip is configured to use (PIP_INDEX_URL, pip.conf), else "
        "https://pypi.org/simple/.",
        metavar="URL",
    ),
    Param("cache_dir", ("--cache-dir",), "Default: $XDG_CACHE_HOME/cudadoctor.", metavar="DIR"),
    Param("limit", ("--limit",), "Newest releases read per project.", kind="int", metavar="N", default=40),
)

LIST_CHECKS = (FORMAT.but(help="text, json, or markdown (a table).", choices=_LISTING),)

EXPLAIN = (
    Param("code", (), "A check's code (CD102) or name.", metavar="CODE", required=True),
    FORMAT.but(help="text, json or markdown.", choices=_LISTING),
)

COMPARE = (
    Param(
        "paths",
        (),
        "Snapshots (cudadoctor snapshot) or JSON reports (check -f json) of the nodes, or directories of them; a node "
        "is named by its file (reports/%N.json from srun).",
        kind="texts",
        metavar="REPORT|DIR...",
        required=True,
    ),
    Param(
        "baseline",
        ("--baseline",),
        "Judge every node against this node's report, or a JSON object of expected values "
        '({"nccl": "2.28.9 (pip)", "driver_branch": "580"}); default: the majority of each pool.',
        metavar="FILE",
    ),
    Param(
        "expect_hosts",
        ("--expect-hosts",),
        "The nodes that must have a report: a Slurm host list (gpu[001-098]) or a file of names, one a line; a node "
        "without one is named.",
        metavar="HOSTLIST|FILE",
    ),
    Param(
        "expect_gpus",
        ("--expect-gpus",),
        "What each kind of node holds (8xH100; repeat for several kinds): a node with fewer GPUs, or a model none "
        "names, is named. Default: the majority of its pool.",
        kind="texts",
        metavar="COUNTxMODEL",
    ),
    Param(
        "max_age",
        ("--max-age",),
        "Name the nodes whose report is older than this (seconds, or 90m, 2h, 1d).",
        metavar="AGE",
    ),
    FORMAT.but(help="text, json or markdown.", choices=_LISTING),
)

COMPLETION = (
    Param(
        "shell",
        (),
        "bash, zsh, fish or powershell.",
        kind="choice",
        choices=("bash", "zsh", "fish", "powershell"),
        required=True,
    ),
)

#: The variable a shell's completion script sets when it asks for the words that may follow (click's protocol:
#: https://click.palletsprojects.com/en/stable/shell-completion/): typer answers it, and cudadoctor.entry routes
#: such a call to typer, past the fast path.
COMPLETE_VAR = "_CUDADOCTOR_COMPLETE"

#: The flags that ask any command (or none) for its help.
HELP_FLAGS = ("-h", "--help")

#: The options taken before any command (``--color`` and ``--no-color`` also after it:
#: :func:`cudadoctor.commands.take_color_options` takes them out of the command line first).
COLOR = Param(
    "color",
    ("--color",),
    "Colour the output: auto (on a terminal, unless NO_COLOR is set or TERM=dumb; FORCE_COLOR forces it), always "
    "or never. Taken before or after the command's name, like --no-color.",
    kind="choice",
    choices=tuple(m.value for m in ColorMode),
    default=ColorMode.AUTO.value,
)
NO_COLOR = _flag("no_color", ("--no-color",), "The same as --color never.")
GLOBAL = (_flag("version", ("--version", "-V"), "Print the version."), COLOR, NO_COLOR)

#: Each command's parameters, in the order --help lists them.
COMMANDS: dict[str, tuple[Param, ...]] = {
    "check": CHECK,
    "snapshot": SNAPSHOT,
    "usage": USAGE,
    "suggest": SUGGEST,
    "update": UPDATE,
    "list-checks": LIST_CHECKS,
    "explain": EXPLAIN,
    "compare": COMPARE,
    "why": WHY,
    "completion": COMPLETION,
}
