"""Trajectory files in ManiSkill 3.0.1's exact layout, made from one of ours with h5py: what its
motion-planning demos (`RecordEpisode` under `examples/motionplanning/panda/run.py`) and its replay
tool write. No SkillForge header, no commit marks, no drive targets or rewards; the env kwargs its
scripts pass to `gym.make` (shader packs, render and viewer cameras, `sim_backend`; a replayed file
also `num_envs` and `reward_mode`); reset kwargs `{"options": None, "seed": s}`."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

# gym.make kwargs of ManiSkill's motion-planning script (its defaults: --shader default, -b auto)
MOTION_PLANNING_KWARGS = {
    "obs_mode": "none",
    "control_mode": "pd_joint_pos",
    "render_mode": "rgb_array",
    "sensor_configs": {"shader_pack": "default"},
    "human_render_camera_configs": {"shader_pack": "default"},
    "viewer_camera_configs": {"shader_pack": "default"},
    "sim_backend": "auto",
}


def _copy_tree(src: h5py.Group, dst: h5py.Group) -> None:
    for name, item in src.items():
        if isinstance(item, h5py.Group):
            _copy_tree(item, dst.create_group(name, track_order=True))
        else:
            dst.create_dataset(name, data=item[()], dtype=item.dtype)


def to_maniskill(src: Path, dst: Path, env_id: str | None = None, replayed: bool = False,
                 max_episode_steps: int | None = None) -> Path:
    """Rewrites our trajectory file `src` as ManiSkill writes it, into `dst` (+ sidecar).
    replayed: as ManiSkill's replay tool writes its output (its env kwargs: num_envs,
    reward_mode, a concrete sim_backend), else as its motion-planning script does.
    max_episode_steps: the sidecar's (ManiSkill's motion-planning demos run past theirs)."""
    src_meta = json.loads(src.with_suffix(".json").read_text())
    info = src_meta["env_info"]
    kwargs = dict(MOTION_PLANNING_KWARGS, obs_mode=info["env_kwargs"]["obs_mode"], control_mode=info["env_kwargs"]["control_mode"])
    if replayed:
        kwargs.update(sim_backend="physx_cpu", reward_mode=None, num_envs=1)
    episodes = []
    with h5py.File(src, "r") as f, h5py.File(dst, "w") as out:
        for e in src_meta["episodes"]:
            g, name = f[f"traj_{e['episode_id']}"], f"traj_{e['episode_id']}"
            o = out.create_group(name, track_order=True)
            if "obs" in g:
                if isinstance(g["obs"], h5py.Dataset):
                    o.create_dataset("obs", data=g["obs"][()])
                else:
                    _copy_tree(g["obs"], o.create_group("obs", track_order=True))
            else:  # obs_mode "none": ManiSkill records an empty observation dict
                o.create_group("obs", track_order=True)
            o.create_dataset("actions", data=g["actions"][()], dtype=np.float32)
            for key in ("terminated", "truncated", "success"):  # PickCube's evaluate has no "fail": none recorded
                o.create_dataset(key, data=g[key][()], dtype=bool)
            states = o.create_group("env_states", track_order=True)
            for group in ("actors", "articulations"):  # ManiSkill's get_state_dict: no drive targets
                _copy_tree(g["env_states"][group], states.create_group(group, track_order=True))
            if replayed and "rewards" in g:
                o.create_dataset("rewards", data=g["rewards"][()], dtype=np.float32)
            episodes.append({
                "episode_id": e["episode_id"],
                "episode_seed": e["episode_seed"],
                "control_mode": e["control_mode"],
                "elapsed_steps": e["elapsed_steps"],
                "reset_kwargs": {"options": None, "seed": e["episode_seed"]},
                "success": bool(g["success"][-1]),
            })
    meta = {
        "env_info": {"env_id": env_id or info["env_id"], "env_kwargs": kwargs, "max_episode_steps": max_episode_steps or info["max_episode_steps"]},
        "commit_info": None,
        "source_type": "motionplanning",
        "source_desc": "official motion planning solution from ManiSkill contributors",
        "episodes": episodes,
    }
    dst.with_suffix(".json").write_text(json.dumps(meta, indent=2))
    return dst
