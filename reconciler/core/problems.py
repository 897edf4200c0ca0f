"""Problems a user can cause, as values: ``path:line: message``.

The core reports problems instead of raising, so that one bad file never stops
the rest of the fleet from reconciling.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class Problem:
    path: str
    line: int
    message: str
    severity: str = "error"  # error | warning

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.severity}: {self.message}"
