"""The OpInfo entries (``name@dtype``) known to fail on the lazy ``cpu`` and ``interp``
devices, each with why. ``tests/test_opinfo.py`` fails when one of them passes."""

EXPECTED_FAILURES: dict[str, str] = {
}
