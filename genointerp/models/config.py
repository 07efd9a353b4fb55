"""The config.json round trip shared by every model's frozen config dataclass."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import ClassVar


class ModelConfig:
    """Mixin for a frozen dataclass: ARCHITECTURE names it in config.json, LABEL in messages."""

    ARCHITECTURE: ClassVar[str]
    LABEL: ClassVar[str]

    def to_dict(self) -> dict:
        return {"architecture": self.ARCHITECTURE, **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict):
        if d.get("architecture") != cls.ARCHITECTURE:
            raise ValueError(f"not {cls.LABEL} configuration (architecture {d.get('architecture')!r})")
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known - {"architecture"}
        if unknown:
            raise ValueError(f"unknown {cls.LABEL.split()[-1]} settings: {', '.join(sorted(unknown))}")
        return cls(**{k: v for k, v in d.items() if k in known})
