"""Helpers shared by the test files, imported one way: ``from tests.support.<module> import ...``.

Fixtures stay in the ``conftest.py`` files; everything else a test reuses (oracles, servers,
processes, seeds) lives here.
"""
