"""Wrappers over batched envs."""

from envs.wrappers.video import RecordVideo

__all__ = ["RecordVideo"]
