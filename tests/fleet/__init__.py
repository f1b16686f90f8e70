"""The cluster recipes of examples/ (Slurm, Ray, Kubernetes), run on the real engines where they can start."""
