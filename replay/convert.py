"""`replay convert`: a trajectory file in another observation and/or control mode.

Pipeline, per batch of B episodes (in this process, or spread over W workers: local processes or
Ray actors, envs/executor.py):

1. control conversion (when the control mode changes): the closed loop of replay/control.py in
   a batched env of the target mode. An episode whose converted run ends without success
   failed; the run only feeds the controller actions computed from its own drive targets, so
   it *is* the open-loop replay of the stored actions from the recorded initial state.
2. otherwise, unless `use_env_states`: the recorded actions are replayed open loop from the
   initial state (replay/check.py); an episode that does not reproduce its success failed, and
   the report names the step where the replay left the recorded states.
3. observations (when an obs mode other than none is asked for): every state of the
   (converted) episode is restored and observed (replay/observe.py).

The input is never opened for writing. The output is written as OUT.pending.h5, committed as
batches land, and renamed to OUT when complete (`replay.trajectory.Output`, the commit protocol
`demos generate` shares); its sidecar records what it was converted from. An interrupted
conversion leaves OUT.pending.h5, which `resume` continues after its last episode.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Iterator

import tyro

from envs.core.registry import check_env_id
from envs.executor import Executor, Lost, make_pool, parse_executor
from envs.modes import ControlMode, ObsMode, parse_mode
from replay.control import CONVERTIBLE, ActionNoise, ConvertLimits
from replay.observe import OBS_UNITS
from replay.trajectory import Output, TrajectoryWriter, batch_env_kwargs, check_sidecar, pending_path, precompress, read_meta

POSITION_SOURCES = tuple(m for m in ControlMode if m.sets_position)  # drive targets are a position reference


@dataclass
class ConvertConfig:
    file: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="FILE")]
    """input trajectory .h5 (never modified)"""
    obs: Annotated[str | None, tyro.conf.arg(name="obs-mode", metavar="MODE", help_behavior_hint="(default: the input's)",
                                             help="obs mode: " + ", ".join(m.value for m in ObsMode))] = None
    control: Annotated[str | None, tyro.conf.arg(name="control-mode", metavar="MODE", help_behavior_hint="(default: the input's)",
                                                 help="control mode to convert to: " + ", ".join(m.value for m in CONVERTIBLE))] = None
    out: Annotated[Path | None, tyro.conf.arg(metavar="PATH", help_behavior_hint="(default: FILE's name + .OBS.CONTROL.h5, beside it)")] = None
    """output .h5"""
    num_envs: Annotated[int | None, tyro.conf.arg(metavar="INT", help_behavior_hint="(default: 64; 16 for camera modes)")] = None
    """episodes converted at once in one batched env"""
    workers: Annotated[int | None, tyro.conf.arg(metavar="INT", help_behavior_hint="(default: 1; with --executor ray, one per CPU of the cluster)")] = 1
    """workers, each converting batches"""
    count: Annotated[int | None, tyro.conf.arg(metavar="K", help_behavior_hint="(default: every episode)")] = None
    """convert only the first K episodes"""
    use_env_states: bool = False
    """obs-only conversion: trust the recorded states, skip checking that the actions replay to success"""
    allow_failure: bool = False
    """also write episodes whose conversion failed (marked unsuccessful)"""
    cam_width: Annotated[int | None, tyro.conf.arg(metavar="W", help_behavior_hint="(default: the input's cameras)")] = None
    """camera image width (camera obs modes)"""
    cam_height: Annotated[int | None, tyro.conf.arg(metavar="H", help_behavior_hint="(default: the input's cameras)")] = None
    """camera image height (camera obs modes)"""
    overwrite: bool = False
    """replace an existing output (or an interrupted one's OUT.pending.h5)"""
    resume: bool = False
    """continue an interrupted conversion (its OUT.pending.h5)"""
    limits: tyro.conf.Suppress[ConvertLimits] = field(default_factory=ConvertLimits)
    noise: ActionNoise = field(default_factory=ActionNoise)
    """DART-style perturbed conversion (replay/control.py ActionNoise)"""
    executor: str = "local"
    """local (worker processes on this machine) or ray (Ray actors on a cluster; pip install -e ".[ray]")"""
    address: Annotated[str | None, tyro.conf.arg(metavar="ADDR", help_behavior_hint="(default: a local Ray started for the run)")] = None
    """the Ray cluster to join, e.g. HEAD:6379"""
    keep_workers: Annotated[float, tyro.conf.arg(metavar="MINUTES")] = 0.0
    """with --address: the Ray workers stay up this long after the run, idle, and the next command
    on that cluster takes them over instead of starting its own (0: they stop with the run)"""

    def __post_init__(self) -> None:
        self.executor_kind = parse_executor(self.executor, self.address, self.keep_workers)
        self.file = Path(self.file)
        self.meta = read_meta(self.file)  # TrajectoryError: missing, not a trajectory, sidecar mismatch
        info = self.meta["env_info"]
        self.env_id = check_env_id(info["env_id"])
        kwargs = info.get("env_kwargs", {})
        self.source_obs = parse_mode(ObsMode, kwargs.get("obs_mode", "none"), "obs mode")
        self.source_control = parse_mode(ControlMode, kwargs.get("control_mode", "pd_joint_pos"), "control mode")
        self.obs_mode = parse_mode(ObsMode, self.obs if self.obs is not None else self.source_obs.value, "obs mode")
        self.control_mode = parse_mode(
            ControlMode, self.control if self.control is not None else self.source_control.value, "control mode"
        )
        if self.converts_control:
            if self.control_mode not in CONVERTIBLE:
                allowed = ", ".join(m.value for m in CONVERTIBLE)
                raise ValueError(f"cannot convert to {self.control_mode.value}; control modes to convert to: {allowed}")
            if self.source_control not in POSITION_SOURCES:
                raise ValueError(f"cannot convert from {self.source_control.value}: its drive targets are no position reference")
            if isinstance(kwargs.get("robot_uids", "panda"), (list, tuple)):
                raise ValueError("control conversion supports single-robot tasks only")
            if self.use_env_states:
                raise ValueError("--use-env-states applies to observation-only conversion (a control conversion replays its actions)")
        elif self.noise.std > 0:
            raise ValueError("--action-noise needs a control conversion: give --control-mode other than the source's "
                             f"({self.source_control.value})")
        if self.num_envs is None:
            self.num_envs = 16 if self.obs_mode.visual else 64
        if self.workers is None and self.executor_kind is Executor.LOCAL:
            self.workers = 1
        if self.num_envs < 1 or (self.workers is not None and self.workers < 1):
            raise ValueError("--num-envs and --workers must be >= 1")
        if self.count is not None and self.count < 1:
            raise ValueError(f"--count must be >= 1, got {self.count}")
        if (self.cam_width is None) != (self.cam_height is None):
            raise ValueError("give both --cam-width and --cam-height")
        if self.cam_width is not None:
            if not self.obs_mode.visual:
                raise ValueError("--cam-width/--cam-height need a camera obs mode (" + ", ".join(m.value for m in ObsMode if m.visual) + ")")
            if self.cam_width < 1 or self.cam_height < 1:
                raise ValueError("--cam-width and --cam-height must be >= 1")
        if not self.converts_control and self.obs_mode is self.source_obs and self.cam_width is None:
            raise ValueError(f"nothing to convert: {self.file} is already {self.obs_mode.value} / {self.control_mode.value}")
        check_sidecar(self.file)  # the episodes it lists are the HDF5 file's: one of the two is wrong otherwise
        if self.out is None:
            noisy = f".noise{self.noise.std:g}-{self.noise.seed}" if self.noise.std > 0 else ""
            self.out = self.file.with_name(f"{self.file.stem}.{self.obs_mode.value}.{self.control_mode.value}{noisy}.h5")
        self.out = Path(self.out)
        if self.out.resolve() == self.file.resolve():
            raise ValueError("the output must not be the input")
        Output.check(self.out, self.resume, self.overwrite, whole=True)

    @property
    def part(self) -> Path:
        """Where the output is written until it is complete."""
        return pending_path(self.out)

    @property
    def converts_control(self) -> bool:
        return self.control_mode is not self.source_control

    @property
    def episode_ids(self) -> list[int]:
        ids = [e["episode_id"] for e in self.meta["episodes"]]
        return ids[: self.count] if self.count is not None else ids

    @property
    def sensor_configs(self) -> dict[str, Any] | None:
        base = dict(self.meta["env_info"]["env_kwargs"].get("sensor_configs") or {})
        if self.cam_width is not None:
            base.update(width=self.cam_width, height=self.cam_height)
        return base or None

    def env_kwargs(self, obs_mode: ObsMode) -> dict[str, Any]:
        """gym.make kwargs of an env in the output's control mode and `obs_mode`."""
        kwargs = {k: v for k, v in self.meta["env_info"]["env_kwargs"].items() if k != "sensor_configs"}
        kwargs.update(obs_mode=obs_mode.value, control_mode=self.control_mode.value)
        if obs_mode.visual and self.sensor_configs:
            kwargs["sensor_configs"] = self.sensor_configs
        return kwargs


@dataclass
class Outcome:
    source_id: int
    ok: bool
    reason: str
    episode: Any  # replay.trajectory.Episode


@dataclass
class Report:
    out: Path | None
    converted: int
    total: int
    failed: list[tuple[int, str]]  # (source episode id, why)
    seconds: float
    bytes: int

    def lines(self) -> list[str]:
        rate = self.converted / max(self.total, 1)
        head = f"converted {self.converted}/{self.total} episodes ({rate:.1%}) in {self.seconds:.1f} s"
        out = [head + (f" -> {self.out} ({self.bytes / max(self.converted, 1) / 1024:.0f} KB per episode)" if self.out else "")]
        if self.failed:
            out.append(f"failed {len(self.failed)}:")
            out.extend(f"  episode {i}: {why}" for i, why in self.failed)
        return out


def convert_episodes(cfg: ConvertConfig, ids: list[int], on_done: Callable[[int], None] | None = None) -> list[Outcome]:
    """One batch: converts the source episodes `ids` (len <= cfg.num_envs) in this process;
    `on_done(n)` is told as episodes finish their last phase."""
    from replay.check import check_replay
    from replay.control import convert_batch
    from replay.observe import observe_batch, with_obs
    from replay.trajectory import TrajectoryFile

    src = TrajectoryFile(cfg.file)
    try:
        episodes = [src.episode(i, with_obs=False) for i in ids]
    finally:
        src.close()
    if cfg.converts_control:
        record = not cfg.obs_mode.visual  # state obs modes come with the steps; camera modes render after
        env = _make(cfg, cfg.obs_mode if record else ObsMode.NONE, episodes)
        try:
            results = convert_batch(
                env, episodes, cfg.control_mode, cfg.limits,
                record_obs=record and cfg.obs_mode is not ObsMode.NONE, on_done=on_done if record else None,
                noise=cfg.noise, source=cfg.source_control,
            )
        finally:
            env.close()
        outcomes = [Outcome(i, r.success, r.reason, r.episode) for i, r in zip(ids, results)]
        if record:
            return outcomes
    elif cfg.use_env_states:
        outcomes = [Outcome(i, True, "states used as recorded", e) for i, e in zip(ids, episodes)]
    else:
        env = _make(cfg, ObsMode.NONE, episodes)
        try:
            checked = check_replay(env, episodes, cfg.limits)
        finally:
            env.close()
        outcomes = [Outcome(i, good, why, e) for i, (good, why), e in zip(ids, checked, episodes)]
    keep = [o for o in outcomes if o.ok or cfg.allow_failure]
    if on_done and len(keep) < len(outcomes):
        on_done(len(outcomes) - len(keep))  # dropped: nothing more to do for them
    if keep and cfg.obs_mode is ObsMode.NONE:
        for o in keep:
            o.episode = with_obs(o.episode, None, cfg.obs_mode)
        if on_done:
            on_done(len(keep))
    elif keep:
        env = _make(cfg, cfg.obs_mode, [o.episode for o in keep])
        try:
            obs = observe_batch(env, [o.episode for o in keep], on_done)
        finally:
            env.close()
        for o, ob in zip(keep, obs):
            # images are compressed here, in the worker that rendered them: the parent, which
            # writes every episode, only copies their bytes (and the pipe carries ~1/40 of them)
            o.episode = with_obs(o.episode, precompress(ob), cfg.obs_mode)
    return outcomes


def _make(cfg: ConvertConfig, obs_mode: ObsMode, episodes: list):
    """A batched env with one env per episode, each built as its episode was (`batch_env_kwargs`),
    with the file's time limit."""
    import gymnasium as gym

    import envs  # noqa: F401  (registers)

    kwargs = {"max_episode_steps": cfg.meta["env_info"].get("max_episode_steps"), **cfg.env_kwargs(obs_mode)}
    return gym.make(cfg.env_id, num_envs=len(episodes), **kwargs, **batch_env_kwargs(episodes))


@dataclass(frozen=True)
class ConvertJob:
    """A conversion worker: a task is a batch of source episode ids, the answer their outcomes."""

    cfg: ConvertConfig

    @property
    def render(self) -> bool:
        return self.cfg.obs_mode.visual

    def setup(self) -> Callable[[list[int]], list[Outcome]]:
        return lambda ids: convert_episodes(self.cfg, ids)


def _batches(ids: list[int], size: int) -> list[list[int]]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


def _run_batches(
    cfg: ConvertConfig, batches: list[list[int]], on_done: Callable[[int], None] | None
) -> Iterator[list[Outcome]]:
    """Yields each batch's outcomes, in batch order; in this process `on_done` hears of each
    finished episode, from workers of each finished batch."""
    if cfg.workers == 1 and cfg.executor_kind is Executor.LOCAL:
        for b in batches:
            yield convert_episodes(cfg, b, on_done)
        return
    # fork for local workers: they start with this process's imports (torch, SAPIEN), which spawn
    # would redo in each (2 s here). The `replay` command has made no env or PhysX system before
    # this point, so the workers inherit none; each builds its own envs.
    pool = make_pool(cfg.executor_kind, ConvertJob(cfg), cfg.workers, address=cfg.address, start="fork",
                     keep_minutes=cfg.keep_workers)
    try:
        done: dict[int, list[Outcome]] = {}
        submitted = 0
        for k in range(len(batches)):
            while submitted < len(batches) and pool.idle:
                pool.submit(submitted, batches[submitted])
                submitted += 1
            while k not in done:
                b, outcomes = pool.next_result()
                if isinstance(outcomes, Lost):  # its workers kept dying: the batch fails, nothing is dropped silently
                    outcomes = [Outcome(i, False, outcomes.reason, None) for i in batches[b]]
                done[b] = outcomes
                if on_done:
                    on_done(len(outcomes))
                while submitted < len(batches) and pool.idle:
                    pool.submit(submitted, batches[submitted])
                    submitted += 1
            yield done.pop(k)  # in batch order: the output's episode order does not depend on the workers
    finally:
        pool.close()


def run(cfg: ConvertConfig, on_done: Callable[[int], None] | None = None) -> Report:
    """Converts cfg.episode_ids into cfg.out; `on_done(n)` is called as n more episodes finish."""
    start = time.perf_counter()
    meta = _output_meta(cfg)
    output = Output.plan(cfg.out, cfg.resume, cfg.overwrite, whole=True)
    failed: list[tuple[int, str]] = []
    converted = 0
    complete = False
    writer = output.writer(meta)
    try:
        ids = _remaining(cfg, writer, meta)
        size = min(cfg.num_envs, math.ceil(len(ids) / (cfg.workers or 1))) if ids else 1
        for outcomes in _run_batches(cfg, _batches(ids, size), on_done):
            for o in outcomes:
                converted += o.ok
                if not o.ok:
                    failed.append((o.source_id, o.reason))
                if (o.ok or cfg.allow_failure) and o.episode is not None:
                    o.episode.info = {**o.episode.info, "source_episode_id": o.source_id, "convert": o.reason}
                    writer.add_staged(o.episode, cfg.control_mode.value)
            writer.commit()  # batch by batch: what an interrupted run leaves is what --resume skips
        complete = True
    finally:
        out = output.finish(writer, complete)  # nothing converted: nothing written
    return Report(out, converted, len(ids), failed, time.perf_counter() - start, out.stat().st_size if out else 0)


def _remaining(cfg: ConvertConfig, writer: TrajectoryWriter, meta: dict[str, Any]) -> list[int]:
    """The source episodes still to convert: those after the last one the part file holds (it
    holds them in source order), checked to have been converted with the same settings."""
    ids = cfg.episode_ids
    done = writer.meta["episodes"]
    if not done:
        return ids
    theirs = writer.meta.get("conversion", {})
    diff = [f"{k} {theirs.get(k)} (this run: {v})" for k, v in meta["conversion"].items() if theirs.get(k) != v]
    if diff:
        raise ValueError(f"{cfg.part} was converted with {'; '.join(diff)}: resume with the same settings")
    last = done[-1].get("info", {}).get("source_episode_id")
    if last not in ids:
        raise ValueError(f"{cfg.part} ends with source episode {last}, which this run does not convert")
    return ids[ids.index(last) + 1 :]


def _output_meta(cfg: ConvertConfig) -> dict[str, Any]:
    src = cfg.meta
    env_info = dict(src["env_info"])
    env_info["env_kwargs"] = cfg.env_kwargs(cfg.obs_mode)
    meta = {k: v for k, v in src.items() if k not in ("episodes", "format_version", "env_info")}
    meta["env_info"] = env_info
    meta["conversion"] = {
        "source_file": str(cfg.file),
        "source_obs_mode": cfg.source_obs.value,
        "source_control_mode": cfg.source_control.value,
        "obs_mode": cfg.obs_mode.value,
        "control_mode": cfg.control_mode.value,
        "use_env_states": cfg.use_env_states,
        "allow_failure": cfg.allow_failure,
        "limits": vars(cfg.limits),
    }
    if cfg.noise.std > 0:
        meta["conversion"]["action_noise"] = vars(cfg.noise)
    if cfg.obs_mode.visual:
        meta["obs_info"] = {"units": OBS_UNITS, "depth_unit": "mm", "depth_dtype": "int16"}
    return meta
