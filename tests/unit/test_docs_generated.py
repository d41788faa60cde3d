"""The generated sections of docs/ (scripts/gen_docs.py) are what the code declares."""

from __future__ import annotations

import pytest
from scripts import gen_docs


@pytest.mark.parametrize(("filename", "name", "render"), gen_docs.SECTIONS)
def test_generated_section_matches_the_code(filename: str, name: str, render: object) -> None:
    text = (gen_docs.ROOT / "docs" / filename).read_text()
    section = gen_docs.current(text, name)
    assert section is not None, f"docs/{filename} lost its {name} markers"
    assert callable(render)
    assert section.strip() == render().strip(), f"docs/{filename} is stale: run `make docs`"
