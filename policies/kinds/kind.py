"""What makes a policy kind: its run config (whose `policy` section is the kind's `PolicyConfig`)
and its `Policy`. Each kind's module ends with `KIND = Kind(NameRun, NamePolicy)`."""

from __future__ import annotations

import typing
from dataclasses import dataclass

from policies.config import PolicyConfig, RunConfig
from policies.policy import Policy


@dataclass(frozen=True)
class Kind:
    run: type[RunConfig]
    policy: type[Policy]

    @property
    def name(self) -> str:
        """`policies train NAME`; stored in checkpoints as the run's `kind`."""
        return self.run.kind

    @property
    def config(self) -> type[PolicyConfig]:
        """The kind's PolicyConfig: the type of its run's `policy` section."""
        return typing.get_type_hints(self.run)["policy"]
