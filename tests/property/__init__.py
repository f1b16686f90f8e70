"""Property-based tests (hypothesis) for every parser: no uncaught exception on any input, and
round trips where a value can be rendered and read back."""
