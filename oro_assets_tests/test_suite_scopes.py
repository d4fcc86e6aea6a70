"""How ``scripts/test.sh`` splits the suite between its two workers (``conftest.pytest_xdist_make_scheduler``)."""

from __future__ import annotations

from pathlib import Path

from oro_assets_tests.conftest import LONGEST_SCOPES, folder_scope

REPO = Path(__file__).resolve().parents[1]


def test_a_folder_is_one_scope_and_a_top_level_file_its_own():
    assert folder_scope("oro_assets_tests/curation/test_selection.py::test_upstream") == "oro_assets_tests/curation"
    assert folder_scope("oro_assets_tests/curation/test_selection.py::test_x[a/b::c]") == "oro_assets_tests/curation"
    assert folder_scope("oro_assets_tests/test_jsonio.py::test_a") == "oro_assets_tests/test_jsonio.py"


def test_the_scopes_started_first_exist():
    """A renamed folder or file would silently lose its head start."""
    missing = [scope for scope in LONGEST_SCOPES if not (REPO / scope).exists()]
    assert not missing, missing
