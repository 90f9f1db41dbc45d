"""Trajectory files of ManiSkill 3.0.1 read as ours, and ours kept readable by ManiSkill.

ManiSkill's `RecordEpisode` (its motion-planning demos, its replay tool, users' own recordings)
writes the layout docs/FORMAT.md describes without our additions: no header, no commit marks, no
drive targets, and a sidecar whose `env_kwargs` are whatever its `gym.make` was given, including
settings our envs do not take (shader packs, render and viewer cameras, `sim_backend`,
`num_envs`, `reward_mode`...). A sidecar without `format_version` is such a file; `adopt` turns
its metadata into ours once, where the format is read (`layout.read_meta`), so every
tool rebuilds its envs from clean kwargs:

- `env_kwargs`: what the task's env takes is kept; ManiSkill's `sim_config` gives `sim_freq` and
  `control_freq`; a CPU `sim_backend` ("auto", "cpu", "physx_cpu") is ours; `sensor_configs`
  loses its `shader_pack` keys (our cameras render with their own shader). Everything else is
  left out and named in one `note:` line on stderr (once per file and process).
- each episode's seed is its `reset_kwargs["seed"]` (a one-element list too) or `episode_seed`;
  reset `options` are left out (named in the note when not empty). A task whose scene ManiSkill
  redraws from the seed at every reset of one env (PegInsertionSide's geometry) gets the
  episode's `scene_kwargs` from its seed (`seeded_scene_kwargs`).
- a task we do not have, or episodes without `actions` (T, A) and `env_states/actors`,
  `env_states/articulations` (our conversions restore states by name), raise a
  `TrajectoryError` naming what is missing.

The other way round, ManiSkill's replay tool rebuilds an env with `gym.make(env_id,
**env_kwargs)`, so a sidecar we write keeps there only kwargs ManiSkill's envs take; kwargs of
ours alone (`physics`, `num_workers`, ...) go under `env_info.skillforge_env_kwargs`, and
`merge_own_kwargs` puts them back when the file is read.
"""

from __future__ import annotations

import functools
import inspect
import sys
from pathlib import Path
from typing import Any

import h5py

from replay.trajectory.episode import TrajectoryError

# gym.make kwargs of ManiSkill 3.0.1's BaseEnv (mani_skill/envs/sapien_env.py)
MANISKILL_ENV_KWARGS = frozenset({
    "num_envs", "obs_mode", "reward_mode", "control_mode", "render_mode", "shader_dir", "enable_shadow",
    "sensor_configs", "human_render_camera_configs", "viewer_camera_configs", "robot_uids", "sim_config",
    "reconfiguration_freq", "sim_backend", "render_backend", "parallel_in_single_scene", "enhanced_determinism",
})
CPU_BACKENDS = ("auto", "cpu", "physx_cpu")  # ManiSkill's names that mean (or, for one env, pick) CPU PhysX
OWN_KWARGS_KEY = "skillforge_env_kwargs"  # env_info key of the gym.make kwargs only our envs take


def is_maniskill(meta: dict) -> bool:
    """A sidecar of a file that ManiSkill wrote (ours always carry format_version)."""
    return "format_version" not in meta


def split_own_kwargs(meta: dict) -> dict:
    """The sidecar as written to disk: env_kwargs only ManiSkill's gym.make takes, ours apart."""
    info = meta.get("env_info")
    if not isinstance(info, dict) or not isinstance(info.get("env_kwargs"), dict):
        return meta
    kwargs = info["env_kwargs"]
    own = {k: v for k, v in kwargs.items() if k not in MANISKILL_ENV_KWARGS}
    if not own:
        return meta
    info = {**info, "env_kwargs": {k: v for k, v in kwargs.items() if k in MANISKILL_ENV_KWARGS}, OWN_KWARGS_KEY: own}
    return {**meta, "env_info": info}


def merge_own_kwargs(meta: dict) -> dict:
    """Inverse of `split_own_kwargs`: env_kwargs as our gym.make takes them."""
    info = meta.get("env_info")
    if not isinstance(info, dict) or OWN_KWARGS_KEY not in info:
        return meta
    info = dict(info)
    own = info.pop(OWN_KWARGS_KEY) or {}
    info["env_kwargs"] = {**(info.get("env_kwargs") or {}), **own}
    return {**meta, "env_info": info}


def _accepted_kwargs(cls: type) -> set[str]:
    """Keyword parameters of the env class's __init__ chain."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self":
                names.add(p.name)
    return names


def _strip_shader(configs: Any) -> tuple[Any, bool]:
    """sensor_configs without `shader_pack` keys (top level and per camera); whether any was there."""
    if not isinstance(configs, dict):
        return configs, False
    out, found = {}, False
    for k, v in configs.items():
        if k in ("shader_pack", "shader_dir"):
            found = True
        elif isinstance(v, dict):
            out[k], inner = _strip_shader(v)
            found |= inner
        else:
            out[k] = v
    return out, found


def _env_kwargs(kwargs: dict, accepted: set[str], first: h5py.Group | None, control: str | None) -> tuple[dict, list[str]]:
    """Our gym.make kwargs for a ManiSkill file's, and what was left out."""
    out: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in kwargs.items():
        if key == "sim_backend":
            if value in CPU_BACKENDS:
                out[key] = "physx_cpu"
            else:
                ignored.append(f"sim_backend={value!r} (replayed on physx_cpu)")
        elif key == "sim_config" and isinstance(value, dict):
            for k, v in value.items():
                if k in ("sim_freq", "control_freq") and k in accepted:
                    out[k] = v
                else:
                    ignored.append(f"sim_config.{k}")
        elif key == "sensor_configs":
            configs, had_shader = _strip_shader(value)
            if had_shader:
                ignored.append("sensor_configs.shader_pack")
            if configs:
                out[key] = configs
        elif key in ("num_envs", "render_mode") or key not in accepted:
            # num_envs: the recording's batch (ours choose theirs); render_mode: only env.render(),
            # which our tools ask for themselves (it would build render scenes in state modes)
            if value is not None:
                ignored.append(key)
        elif value is not None:
            out[key] = value
    if "control_mode" not in out and control:
        out["control_mode"] = control
    if "obs_mode" not in out:  # ManiSkill's default obs mode is state
        out["obs_mode"] = "state" if isinstance(first.get("obs") if first is not None else None, h5py.Dataset) else "none"
    return out, ignored


def _seed(entry: dict, where: str) -> int:
    seed = (entry.get("reset_kwargs") or {}).get("seed", entry.get("episode_seed"))
    if isinstance(seed, list) and len(seed) == 1:
        seed = seed[0]
    if not isinstance(seed, int):
        raise TrajectoryError(f"{where}: episode {entry.get('episode_id')} has no integer seed (reset_kwargs.seed or episode_seed)")
    return seed


def _check_layout(f: h5py.File, episodes: list[dict], where: str) -> None:
    from replay.trajectory.layout import group_name

    for e in episodes:
        name = group_name(e.get("episode_id"))
        g = f.get(name)
        missing = [] if isinstance(g, h5py.Group) else [name]
        if g is not None and not missing:
            acts = g.get("actions")
            if not isinstance(acts, h5py.Dataset) or acts.ndim != 2:
                missing.append(f"{name}/actions as one (T, A) array" + (" (it is a dict of actions)" if isinstance(acts, h5py.Group) else ""))
            missing += [f"{name}/{k}" for k in ("terminated", "truncated") if not isinstance(g.get(k), h5py.Dataset)]
            missing += [f"{name}/env_states/{k}" for k in ("actors", "articulations") if not isinstance(g.get(f"env_states/{k}"), h5py.Group)]
        if missing:
            raise TrajectoryError(
                f"{where}: a ManiSkill file without {', '.join(missing)}: SkillForge reads episodes with actions, "
                "terminated, truncated and env states (RecordEpisode's record_env_state=True)"
            )


def adopt(meta: dict, f: h5py.File, path: Path) -> dict:
    """The metadata of a ManiSkill file as ours: env kwargs our envs take, seeds in place; checks
    the task exists and the episodes have what our tools read (a TrajectoryError otherwise)."""
    import envs  # noqa: F401  (registers the tasks)
    from envs.core.registry import TASKS, env_ids
    info = meta["env_info"]
    env_id = info.get("env_id")
    if env_id not in TASKS:
        raise TrajectoryError(f"{path}: a ManiSkill file of {env_id!r}, a task SkillForge does not have; it has: {', '.join(env_ids())}")
    episodes = meta["episodes"]
    _check_layout(f, episodes, str(path))
    from replay.trajectory.layout import group_name

    first = f.get(group_name(episodes[0]["episode_id"])) if episodes else None
    control = episodes[0].get("control_mode") if episodes else None
    kwargs, ignored = _env_kwargs(info.get("env_kwargs") or {}, _accepted_kwargs(TASKS[env_id]), first, control)
    task = TASKS[env_id]
    raw = info.get("env_kwargs") or {}
    # one env that reconfigures at reset (ManiSkill's default for one env of such a task) draws
    # its scene from the reset's seed; a batched recording's scenes are not in the file
    one_env = (raw.get("num_envs") or 1) == 1
    rebuilt = one_env and raw.get("reconfiguration_freq") != 0
    if not rebuilt and task.seeded_scene_kwargs([0]):
        ignored.append("the scenes of a batched or non-reconfiguring recording (default geometry)")
    if one_env and "physics" not in kwargs:
        # ManiSkill's one CPU env simulates alone at the origin: each of ours does too when replayed
        # (on a shared grid, float32 rounding at an env's place moves contacts by their last bits)
        kwargs["physics"] = {"isolated": True}
    adopted = []
    for e in episodes:
        seed = _seed(e, str(path))
        options = (e.get("reset_kwargs") or {}).get("options")
        if options and "reset options" not in ignored:
            ignored.append("reset options")
        scene = task.seeded_scene_kwargs([seed]) if rebuilt else {}
        adopted.append({**e, "seed": seed, "episode_seed": e.get("episode_seed", seed), "reset_kwargs": {"seed": seed},
                        **({"scene_kwargs": scene} if scene else {})})
    if ignored:
        _note(str(path), f"note: {path.name} was written by ManiSkill; left out: {', '.join(ignored)}")
    return {**meta, "env_info": {**info, "env_kwargs": kwargs}, "episodes": adopted}


@functools.lru_cache(maxsize=64)
def _note(path: str, text: str) -> None:
    """One line on stderr per file and process (read_meta runs several times per command)."""
    print(text, file=sys.stderr)
