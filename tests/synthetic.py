"""Small trajectory files made up for tests of the readers' users (export, report): our layout
through TrajectoryWriter, and ManiSkill's layout written directly with h5py (no header, a JSON
sidecar, cameras under obs/sensor_data); and short jittered rollouts to record (policies)."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import h5py
import numpy as np
import torch

from envs.core.tree import row, stack
from replay.trajectory import Episode, TrajectoryWriter

LENGTHS = (7, 12, 9, 5)  # T per episode: ids 1 and 3 fail
H, W = 16, 24


def jittered_rollout(env_id: str, n: int, steps: int, obs_mode: str, reset_seed: int = 0, std: float = 0.02):
    """n envs of env_id in pd_joint_pos, each arm target taking `steps` seeded random steps of
    `std` rad (gripper open): the observation after the reset and after each step, and the
    actions (n, T, A)."""
    env = gym.make(env_id, num_envs=n, obs_mode=obs_mode, control_mode="pd_joint_pos")
    obs, _ = env.reset(seed=reset_seed)
    rng = np.random.default_rng(0)
    target = env.unwrapped.agent.qpos[:, :7].clone()
    observed, actions = [obs], []
    for _ in range(steps):
        target = target + torch.as_tensor(rng.normal(0, std, target.shape), dtype=torch.float32)
        a = torch.cat((target, torch.ones(n, 1)), 1)
        obs, *_ = env.step(a)
        observed.append(obs)
        actions.append(a)
    env.close()
    return observed, torch.stack(actions, 1)


def episode_obs(observed: list, i: int):
    """Env i's observations of a rollout as one episode's: (T + 1, ...) arrays (a tree of them)."""
    return stack([row(o, i) for o in observed])


def frames(t: int, seed: int) -> np.ndarray:
    """(t, H, W, 3) uint8: a smooth gradient with a square moving across it, which video codecs
    keep close (random noise would not survive a lossy codec)."""
    y, x = np.mgrid[0:H, 0:W]
    out = np.zeros((t, H, W, 3), np.uint8)
    for i in range(t):
        out[i, ..., 0] = x * 160 // W + seed * 20
        out[i, ..., 1] = y * 255 // H
        out[i, ..., 2] = 40 + 5 * (i % 40)
        c = (i + seed) % (W - 6)
        out[i, 5:11, c:c + 6] = (250, 250, 250)
    return out


def episode(t: int, seed: int, success: bool, obs: str = "dict", cameras=("base_camera", "hand_camera")) -> Episode:
    rng = np.random.default_rng(seed)
    succ = np.zeros(t, bool)
    if success:
        succ[-1] = True
    fail = np.zeros(t, bool)
    trunc = np.zeros(t, bool)
    if not success:
        (trunc if seed % 2 else fail)[-1] = True
    if obs == "dict":
        o = {
            "agent": {"qpos": rng.normal(size=(t + 1, 9)).astype(np.float32), "qvel": rng.normal(size=(t + 1, 9)).astype(np.float32)},
            "extra": {"goal_pos": rng.normal(size=(t + 1, 3)).astype(np.float32), "is_grasped": np.zeros((t + 1, 1), np.float32)},
            "cameras": {c: {"rgb": frames(t + 1, seed + k)} for k, c in enumerate(cameras)},
        }
    elif obs == "flat":
        o = rng.normal(size=(t + 1, 42)).astype(np.float32)
    else:
        o = None
    cube = np.zeros((t + 1, 13), np.float32)
    cube[:, :3] = (rng.uniform(-0.1, 0.1), rng.uniform(-0.1, 0.1), 0.02)
    goal = np.tile(np.array([rng.uniform(-0.1, 0.1), rng.uniform(-0.1, 0.1), rng.uniform(0.02, 0.3)], np.float32), (t + 1, 1))
    return Episode(
        actions=rng.uniform(-1, 1, size=(t, 8)).astype(np.float32),
        terminated=succ | fail, truncated=trunc, success=succ, fail=fail,
        env_states={"actors": {"cube": cube}, "articulations": {"robot": np.zeros((t + 1, 40), np.float32)},
                    "task": {"goal_pos": goal}},
        seed=seed, rewards=rng.uniform(0, 1, size=t).astype(np.float32), obs=o,
        info={"attempt": seed, "reason": "success" if success else f"planning failed after {seed * 10 + 3} steps"},
    )


def write_ours(path: Path, obs: str = "dict", lengths=LENGTHS, cameras=("base_camera", "hand_camera")) -> Path:
    """A PickCube-v1 file of len(lengths) episodes; episode i succeeds when i is even."""
    obs_mode = {"dict": "rgb", "flat": "state", "none": "none"}[obs]
    meta = {"env_info": {"env_id": "PickCube-v1", "env_kwargs": {"obs_mode": obs_mode, "control_mode": "pd_joint_pos",
                                                                  "robot_uids": "panda"}, "max_episode_steps": 100},
            "source_type": "motionplanning", "source_desc": "made up for tests"}
    with TrajectoryWriter(path, meta) as w:
        w.add_batch([episode(t, i, i % 2 == 0, obs, cameras) for i, t in enumerate(lengths)], "pd_joint_pos")
    return path


def write_maniskill(path: Path, lengths=LENGTHS) -> Path:
    """The same kind of episodes in ManiSkill's layout: obs/sensor_data/<camera>/rgb, the goal as the
    kinematic actor goal_site, no header and no commit marks, the sidecar JSON alone."""
    entries = []
    with h5py.File(path, "w") as f:
        for i, t in enumerate(lengths):
            e = episode(t, i, i % 2 == 0)
            g = f.create_group(f"traj_{i}")
            for key in ("actions", "terminated", "truncated", "success", "fail", "rewards"):
                g[key] = getattr(e, key)
            goal = np.zeros((t + 1, 13), np.float32)
            goal[:, :3] = e.env_states["task"]["goal_pos"]
            g["env_states/actors/cube"] = e.env_states["actors"]["cube"]
            g["env_states/actors/goal_site"] = goal
            g["env_states/articulations/panda"] = np.zeros((t + 1, 31), np.float32)
            g["obs/agent/qpos"] = e.obs["agent"]["qpos"]
            g["obs/agent/qvel"] = e.obs["agent"]["qvel"]
            g["obs/extra/goal_pos"] = e.obs["extra"]["goal_pos"]
            g["obs/sensor_data/base_camera/rgb"] = e.obs["cameras"]["base_camera"]["rgb"]
            g["obs/sensor_param/base_camera/intrinsic_cv"] = np.zeros((t + 1, 3, 3), np.float32)
            entries.append({"episode_id": i, "episode_seed": i, "reset_kwargs": {"seed": i}, "control_mode": "pd_joint_pos",
                            "elapsed_steps": t, "success": bool(i % 2 == 0)})
    side = {"env_info": {"env_id": "PickCube-v1", "env_kwargs": {"obs_mode": "rgb", "control_mode": "pd_joint_pos",
                                                                  "sim_backend": "physx_cpu"}, "max_episode_steps": 50},
            "source_type": "motionplanning", "source_desc": "ManiSkill layout, made up for tests", "episodes": entries}
    path.with_suffix(".json").write_text(json.dumps(side))
    return path
