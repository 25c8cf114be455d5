"""One finding: a problem that doctor, review or the ``okf-harvest`` check reports about one file.

The three report them alike: a ``code`` (doctor's check, review's rule, the harvest check's
name), a ``severity``, the ``file`` it concerns (a bundle path; ``--pr-body`` for the pull
request text), the 1-based ``line`` when there is one, and a ``message``. One JSON shape
(``to_json``) and one text form (``text``) for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem in one file. ``line`` is 1-based in the file, None when not known;
    ``group`` is doctor's (``okf`` or ``profile``), empty elsewhere."""

    code: str
    severity: str
    file: str
    message: str
    line: int | None = None
    group: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "file": self.file, "line": self.line,
                "message": self.message}

    def where(self) -> str:
        """``file:line``, or the file alone when there is no line."""
        return f"{self.file}:{self.line}" if self.line else self.file

    def text(self) -> str:
        """The finding on one line: ``<file>[:<line>]: <severity>: <code>: <message>``."""
        return f"{self.where()}: {self.severity}: {self.code}: {self.message}"

    def sort_key(self) -> tuple[str, int, str, str]:
        return (self.file, self.line or 0, self.code, self.message)

    def with_severity(self, severity: str, message: str | None = None) -> Finding:
        """The same finding at another severity (review's view of a doctor finding, an approval)."""
        return replace(self, severity=severity, message=self.message if message is None else message)
