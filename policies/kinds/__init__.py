"""The policy kinds, one module each (its PolicyConfig, Policy and RunConfig subclasses and its
`KIND`), registered by one entry of `KINDS`. Everything else asks this registry: the CLI's
`policies train KIND`, recipes, and checkpoints, which store the kind's name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from policies.config import PolicyConfig, RunConfig, check, from_dict_lenient_data, merge_sections, read_yaml
from policies.data import ObsSpec
from policies.kinds import act, bc, diffusion
from policies.kinds.kind import Kind
from policies.policy import Policy

KINDS: dict[str, Kind] = {k.name: k for k in (bc.KIND, diffusion.KIND, act.KIND)}


def load_run(kind: str, config_file: str | Path | None = None, data: str = "",
             overrides: dict[str, Any] | None = None) -> RunConfig:
    """Defaults of `kind`, overlaid with a YAML file's sections, then with `overrides` (the same
    sections; no validation of `data` yet)."""
    check(kind in KINDS, f"unknown policy {kind!r}; allowed: {', '.join(KINDS)}")
    raw: dict[str, Any] = {}
    if config_file:
        path = Path(config_file)
        check(path.is_file(), f"--config {path}: no such file")
        raw = read_yaml(path) or {}
        check(isinstance(raw, dict), f"{path}: expected a mapping of sections")
        file_kind = raw.pop("kind", kind)
        check(file_kind == kind, f"{path} is a {file_kind} config; use `policies train {file_kind}`")
    if overrides:
        check(isinstance(overrides, dict), f"run settings: expected a mapping of sections, got {overrides!r}")
        raw = merge_sections(raw, overrides)
    if data:
        raw["data"] = data
    return from_dict_lenient_data(KINDS[kind].run, raw)


def run_from_dict(d: dict[str, Any]) -> RunConfig:
    """Rebuild a run config saved with `to_dict` (in a checkpoint or a run folder)."""
    d = dict(d)
    kind = d.pop("kind")
    check(kind in KINDS, f"unknown policy {kind!r}")
    return from_dict_lenient_data(KINDS[kind].run, d)


def build_policy(spec: ObsSpec, cfg: PolicyConfig) -> Policy:
    """The policy of the kind whose config `cfg` is."""
    policies = {k.config: k.policy for k in KINDS.values()}
    if type(cfg) not in policies:
        raise ValueError(f"no policy for {type(cfg).__name__}; known: {', '.join(c.__name__ for c in policies)}")
    return policies[type(cfg)](spec, cfg)


__all__ = ["KINDS", "Kind", "build_policy", "load_run", "run_from_dict"]
