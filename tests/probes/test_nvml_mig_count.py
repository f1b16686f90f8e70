"""NVML's MIG device count per GPU: empty slots answer NVML_ERROR_NOT_FOUND and are not counted."""

from __future__ import annotations

from cudadoctor.probes.nvml_calls import _mig_device_count


class _NotFound(Exception):
    """Stands for pynvml.NVMLError_NotFound."""


class _FakeNvml:
    def __init__(self, slots: int, filled: set[int], max_fails: bool = False) -> None:
        self.slots, self.filled, self.max_fails = slots, filled, max_fails

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: object) -> int:
        if self.max_fails:
            raise _NotFound("Not Supported")
        return self.slots

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: object, index: int) -> object:
        if index not in self.filled:
            raise _NotFound("Not Found")
        return object()


def test_counts_only_filled_slots() -> None:
    assert _mig_device_count(_FakeNvml(7, {0, 3}), object()) == 2


def test_no_mig_device_created_is_zero() -> None:
    assert _mig_device_count(_FakeNvml(7, set()), object()) == 0


def test_unanswered_max_count_is_unknown() -> None:
    assert _mig_device_count(_FakeNvml(7, {0}, max_fails=True), object()) is None
