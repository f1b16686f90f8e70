"""cudadoctor: a CUDA environment doctor and version resolver."""

__version__ = "0.2.0"
