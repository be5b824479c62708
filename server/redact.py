"""Keep the server's own paths out of API answers: folders, the database, home and Python become placeholders."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from kernelgen.settings import Settings


class Redactor:
    """Replace the server's absolute paths in text (messages, events, figures, files) with short labels."""

    def __init__(self, settings: Settings) -> None:
        places: dict[str, str] = {}
        database = settings.database_url.removeprefix("sqlite:///")
        labelled = [(settings.work_dir, "<work>"), (settings.artifact_root, "<jobs>"), (Path(sys.prefix), "<python>"),
                    (Path(sys.base_prefix), "<python>"), (Path.home(), "~"), (Path.cwd(), "<service>")]
        if database != settings.database_url and database not in ("", ":memory:"):
            labelled.append((Path(database).expanduser().parent, "<data>"))
        for path, label in labelled:
            for form in {str(path.expanduser()), str(path.expanduser().resolve())}:
                if form not in ("/", ""):
                    places.setdefault(form, label)
        # Longest first, so a folder inside another keeps its own label; whole path components only.
        ordered = sorted(places, key=len, reverse=True)
        self._labels = places
        self._pattern = re.compile("|".join(re.escape(p) for p in ordered) + r"(?![\w.-])") if ordered else None

    def text(self, value: str) -> str:
        """Return the text with every known server path replaced by its label."""
        if self._pattern is None or not value:
            return value
        return self._pattern.sub(lambda match: self._labels[match.group(0)], value)

    def value(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value
