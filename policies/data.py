"""Demonstrations in memory: observations and actions of every episode as tensors, an
episode-level seeded train/val split, and windows of observation histories and action chunks.

Reads this project's trajectory files and ManiSkill-layout ones alike (each episode's actions and
obs: a flat state array or a tree with agent/extra and images under ManiSkill's `sensor_data/<camera>/`,
a JSON sidecar with env_info) through `replay.trajectory.TrajectoryFile.demo`, which opens the
file lazily in the process that reads (fork-safe).

Windows follow the diffusion-policy convention: the sample for decision step t of an episode of
T actions has observations t - To + 1 .. t and actions t - To + 1 .. t - To + Tp. Indices before
the episode's start repeat its first observation / action; actions past its end repeat the last
one (absolute control modes) or hold still (delta and velocity modes: the arm's dims zero, each
gripper's dim repeated; a robot without a gripper has no such dim, see `still_dims`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from envs.controllers import gripper_action_dims
from envs.core.registry import default_robot_uids
from envs.modes import ControlMode, ObsMode
from policies.config import DERIVED_INPUTS, DatasetConfig
from replay.trajectory import TrajectoryFile

# Derived inputs: features a policy may ask for (dataset.derived) that the env does not observe,
# computed here from the observation's own entries, the same way for demos and for acting.
PUSH_BEHIND = 0.04  # m: PushCube's push point lies this far behind the cube's centre, on the goal's line


def _tcp_to_goal_pos(leaves: dict[str, torch.Tensor]) -> torch.Tensor:
    """(N, 3) the goal minus the TCP position."""
    return leaves["extra/goal_pos"][:, :3] - leaves["extra/tcp_pose"][:, :3]


def _tcp_to_push_pos(leaves: dict[str, torch.Tensor]) -> torch.Tensor:
    """(N, 3) the push point (PUSH_BEHIND behind the cube's centre on the line from the goal
    through it, at the cube's height) minus the TCP position."""
    cube, goal, tcp = leaves["extra/obj_pose"][:, :3], leaves["extra/goal_pos"][:, :3], leaves["extra/tcp_pose"][:, :3]
    direction = goal[:, :2] - cube[:, :2]
    direction = direction / direction.norm(dim=1, keepdim=True).clamp_min(1e-6)
    push = torch.cat((cube[:, :2] - PUSH_BEHIND * direction, cube[:, 2:]), 1)
    return push - tcp


# name -> (the observation entries it reads, the function)
DERIVED = {
    "tcp_to_goal_pos": (("extra/tcp_pose", "extra/goal_pos"), _tcp_to_goal_pos),
    "tcp_to_push_pos": (("extra/tcp_pose", "extra/goal_pos", "extra/obj_pose"), _tcp_to_push_pos),
}
assert tuple(DERIVED) == DERIVED_INPUTS, "policies/config.py DERIVED_INPUTS names what DERIVED computes"


def with_derived(leaves: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The observation leaves plus "derived/<name>" for each name of DERIVED (N, 3) float32.
    The one place derived inputs are computed: training data and acting both come through here."""
    out = dict(leaves)
    for name in names:
        needs, fn = DERIVED[name]
        missing = [k for k in needs if k not in leaves]
        if missing:
            raise ValueError(f"dataset.derived {name} needs the observation entries {', '.join(missing)}; "
                             f"the observation has: {', '.join(leaves)}")
        out[f"derived/{name}"] = fn({k: torch.as_tensor(np.asarray(leaves[k]) if not torch.is_tensor(leaves[k]) else leaves[k]).float() for k in needs})
    return out


ENV_KWARGS_KEPT = ("robot_uids", "sensor_configs")  # env_kwargs of a demo file that an eval env reuses


@dataclass
class ObsSpec:
    """What a policy sees and does, derived from the data; stored in checkpoints."""

    obs_mode: str
    state_dim: int
    action_dim: int
    state_paths: tuple[str, ...] = ()  # image modes: leaf paths of the state vector, in order
    cameras: tuple[str, ...] = ()
    image_shape: tuple[int, int, int] = (0, 0, 0)  # (C, H, W)
    depth_scale_mm: float = 2000.0
    aux_paths: tuple[str, ...] = ()  # image modes: leaf paths of the auxiliary targets (training only)
    aux_dim: int = 0
    derived: tuple[str, ...] = ()  # dataset.derived: inputs computed from the observation (DERIVED)

    @property
    def mode(self) -> ObsMode:
        return ObsMode(self.obs_mode)

    @property
    def visual(self) -> bool:
        return self.mode.visual

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ObsSpec":
        d = dict(d)
        for k in ("state_paths", "cameras", "image_shape", "aux_paths", "derived"):
            d[k] = tuple(d.get(k, ()))
        return cls(**d)


def _leaves(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out = {}
    for k in sorted(tree):
        v = tree[k]
        path = f"{prefix}{k}"
        out.update(_leaves(v, path + "/") if isinstance(v, dict) else {path: v})
    return out


def _state_leaves(obs: dict[str, Any]) -> dict[str, Any]:
    """Every non-camera leaf of an observation tree, by path (agent/qpos, extra/goal_pos, ...)."""
    return _leaves({k: v for k, v in obs.items() if k not in ("sensor_data", "sensor_param", "pointcloud")})


def _camera_tree(obs: dict[str, Any]) -> dict[str, Any]:
    """Camera uid -> its images (sensor_data/<uid>/rgb, .../depth), as ManiSkill lays them out."""
    return obs.get("sensor_data", {})


def _paths(leaves: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, ...]:
    """The leaf paths named by `keys` (a key names itself and every leaf under it), in leaf order."""
    return tuple(p for p in leaves if any(p == key or p.startswith(key + "/") for key in keys))


def _width(leaves: dict[str, Any], paths: tuple[str, ...]) -> int:
    return sum(int(np.prod(np.shape(leaves[p])[1:])) for p in paths)


def describe(obs: Any, actions: np.ndarray, cfg: DatasetConfig) -> ObsSpec:
    """The ObsSpec of one episode's (or one env step's) observations under `cfg`."""
    mode = cfg.mode
    if cfg.aux_keys and not mode.visual:
        raise ValueError(f"dataset.aux_keys are predicted from images: they need an image obs mode, not {mode.value}")
    if mode is ObsMode.STATE:
        if cfg.derived:
            raise ValueError("dataset.derived needs named observation entries: use dataset.obs_mode state_dict (or an image mode)")
        if isinstance(obs, dict):
            raise ValueError("dataset.obs_mode state needs flat state observations (generate with --obs-mode state; "
                             "for named entries use dataset.obs_mode state_dict)")
        return ObsSpec(mode.value, int(np.shape(obs)[-1]), int(actions.shape[-1]))
    if mode is ObsMode.STATE_DICT and not isinstance(obs, dict):
        raise ValueError("dataset.obs_mode state_dict needs observations with named entries (replay convert --obs-mode state_dict)")
    if mode.visual and (not isinstance(obs, dict) or not _camera_tree(obs)):
        raise ValueError(f"dataset.obs_mode {mode.value} needs camera observations in the data (replay convert --obs-mode {mode.value})")
    derived = tuple(cfg.derived)
    leaves = with_derived(_state_leaves(obs), derived)
    paths = _paths(leaves, tuple(cfg.state_keys) + tuple(f"derived/{n}" for n in derived))
    state_dim = _width(leaves, paths)
    if not mode.visual:
        if not paths:
            raise ValueError(f"dataset.state_keys {list(cfg.state_keys)} name none of the data's entries: {', '.join(leaves)}")
        return ObsSpec(mode.value, state_dim, int(actions.shape[-1]), paths, derived=derived)
    cams_present = sorted(_camera_tree(obs))
    cameras = tuple(cfg.cameras) or tuple(cams_present)
    missing = [c for c in cameras if c not in cams_present]
    if missing:
        raise ValueError(f"dataset.cameras {missing} not in the data; it has {cams_present}")
    aux = _paths(leaves, cfg.aux_keys)
    if cfg.aux_keys and not aux:
        raise ValueError(f"dataset.aux_keys {list(cfg.aux_keys)} name none of the data's entries: {', '.join(leaves)}")
    channels = 4 if mode is ObsMode.RGBD else 3
    h, w = np.shape(_camera_tree(obs)[cameras[0]]["rgb"])[-3:-1]
    return ObsSpec(mode.value, state_dim, int(actions.shape[-1]), paths, cameras, (channels, int(h), int(w)), cfg.depth_scale_mm,
                   aux, _width(leaves, aux), derived)


def extract(obs: Any, spec: ObsSpec) -> dict[str, torch.Tensor]:
    """Policy inputs from an observation batch (leading dim N: env obs or an episode's T + 1):
    {"state": (N, D) float32, "images": (N, K, C, H, W) uint8 (rgb) or int16 (rgbd)}."""
    if spec.mode is ObsMode.STATE:
        return {"state": torch.as_tensor(np.asarray(obs) if not torch.is_tensor(obs) else obs).float()}
    leaves = with_derived(_state_leaves(obs), spec.derived)
    n = len(next(iter(leaves.values()))) if leaves else len(_camera_tree(obs)[spec.cameras[0]]["rgb"])
    state = _flat(leaves, spec.state_paths, n)
    if not spec.visual:
        return {"state": state}
    cams = _camera_tree(obs)
    images = []
    for uid in spec.cameras:
        rgb = torch.as_tensor(cams[uid]["rgb"])  # (N, H, W, 3) uint8
        if spec.mode is ObsMode.RGBD:
            depth = torch.as_tensor(cams[uid]["depth"]).to(torch.int16)  # (N, H, W, 1) mm
            rgb = torch.cat((rgb.to(torch.int16), depth), -1)
        images.append(rgb.permute(0, 3, 1, 2))
    return {"state": state, "images": torch.stack(images, 1).contiguous()}  # (N, K, C, H, W)


def _flat(leaves: dict[str, Any], paths: tuple[str, ...], n: int) -> torch.Tensor:
    parts = [torch.as_tensor(leaves[p]).float().reshape(n, -1) for p in paths]
    return torch.cat(parts, 1) if parts else torch.zeros(n, 0)


def extract_aux(obs: dict[str, Any], spec: ObsSpec) -> torch.Tensor:
    """(N, aux_dim) auxiliary training targets of an observation batch (spec.aux_paths)."""
    leaves = _state_leaves(obs)
    return _flat(leaves, spec.aux_paths, len(leaves[spec.aux_paths[0]]))


def env_info(file: TrajectoryFile) -> dict[str, Any]:
    """env id, kwargs an eval env reuses, control mode and episode length of a demo file."""
    info = file.env_info
    kwargs = info.get("env_kwargs", {})
    control = kwargs.get("control_mode") or (file.episodes[0].get("control_mode") if file.episodes else None)
    if not control:
        raise ValueError(f"{file.path}: no control mode in its sidecar")
    return {
        "env_id": info["env_id"],
        "env_kwargs": {k: kwargs[k] for k in ENV_KWARGS_KEPT if k in kwargs},
        "control_mode": control,
        "max_episode_steps": int(info.get("max_episode_steps") or 0),
    }


def still_dims(env: dict[str, Any], action_dim: int) -> torch.Tensor | None:
    """(A,) bool: the action dims that are zero in a chunk past its episode's end, so that the
    robot holds still (the arm dims of a mode whose zero action holds the arm; each gripper dim
    repeats its last action), or None where every dim repeats its last (absolute modes). The
    gripper dims follow the robots' controllers: a gripperless robot (`panda_stick`) has none."""
    mode = ControlMode(env["control_mode"])
    if not mode.zero_holds_still:
        return None
    uids = env["env_kwargs"].get("robot_uids") or default_robot_uids(env["env_id"])
    still = torch.ones(action_dim, dtype=torch.bool)
    still[gripper_action_dims(uids, mode, action_dim)] = False
    return still


class DemoData:
    """Every used episode of a trajectory file, concatenated: obs tensors with T_e + 1 rows per
    episode, actions with T_e rows."""

    def __init__(self, path: str, cfg: DatasetConfig):
        file = TrajectoryFile(path)
        entries = file.episodes[: cfg.max_episodes or None]
        if not entries:
            raise ValueError(f"{path}: no episodes")
        self.env = env_info(file)
        states, images, auxes, actions, plans, lengths = [], [], [], [], [], []
        perturbed = False  # any episode with reference_actions
        self.spec: ObsSpec | None = None
        for entry in entries:
            eid = entry["episode_id"]
            demo = file.demo(eid)
            if demo.obs is None:
                raise ValueError(f"{path}: episode {eid} has no obs (generate with --obs-mode state, or replay convert)")
            # a perturbed conversion (replay convert --action-noise): the expert's corrective action
            # now, and its noise-free path after (`plan`), rather than what was executed
            act = (demo.expert_actions if demo.expert_actions is not None else demo.actions).astype(np.float32)
            plan = demo.reference_actions.astype(np.float32) if demo.reference_actions is not None else None
            perturbed |= plan is not None
            if self.spec is None:
                self.spec = describe(demo.obs, act, cfg)
            x = extract(demo.obs, self.spec)
            if len(x["state"]) != len(act) + 1:
                raise ValueError(f"{path}: episode {eid} has {len(x['state'])} obs for {len(act)} actions")
            states.append(x["state"])
            if "images" in x:
                images.append(x["images"])
            if self.spec.aux_dim:
                auxes.append(extract_aux(demo.obs, self.spec))
            actions.append(torch.from_numpy(act))
            plans.append(actions[-1] if plan is None else torch.from_numpy(plan))
            lengths.append(len(act))
        file.close()
        self.episode_ids = [e["episode_id"] for e in entries]
        self.state = torch.cat(states)  # (M + E, D)
        self.images = torch.cat(images) if images else None  # (M + E, K, C, H, W)
        self.aux = torch.cat(auxes) if auxes else None  # (M + E, aux_dim)
        self.actions = torch.cat(actions)  # (M, A)
        # (M, A) the actions after the current one in a chunk; None: the same as `actions`
        self.plan = torch.cat(plans) if perturbed else None
        self.lengths = torch.tensor(lengths)  # (E,)
        self.act_start = torch.cumsum(self.lengths, 0) - self.lengths
        self.obs_start = self.act_start + torch.arange(len(lengths))

    @staticmethod
    def peek(path: str, cfg: DatasetConfig) -> tuple[ObsSpec, dict[str, Any]]:
        """The ObsSpec and env info of a file from its first episode, without loading the rest."""
        file = TrajectoryFile(path)
        try:
            if not file.episodes:
                raise ValueError(f"{path}: no episodes")
            demo = file.demo(file.episodes[0]["episode_id"])
            if demo.obs is None:
                raise ValueError(f"{path}: episodes have no obs (generate with --obs-mode state, or replay convert)")
            return describe(demo.obs, demo.actions, cfg), env_info(file)
        finally:
            file.close()

    @property
    def num_episodes(self) -> int:
        return len(self.lengths)

    def split(self, val_fraction: float, seed: int) -> tuple[list[int], list[int]]:
        """Episode indices (into this data) for training and validation, seeded."""
        return split_episodes(self.num_episodes, val_fraction, seed)

    def windows(self, episodes: list[int], obs_horizon: int, pred_horizon: int) -> dict[str, torch.Tensor]:
        """Index tables of every sample of `episodes`: obs (S, To) rows into state/images,
        actions (S, Tp) rows into actions, past_end (S, Tp) True where the chunk ran off the episode."""
        obs_idx = [torch.zeros(0, obs_horizon, dtype=torch.long)]
        act_idx = [torch.zeros(0, pred_horizon, dtype=torch.long)]
        past = [torch.zeros(0, pred_horizon, dtype=torch.bool)]
        for e in episodes:
            T = int(self.lengths[e])
            t = torch.arange(T)[:, None]
            o = (t - obs_horizon + 1 + torch.arange(obs_horizon)).clamp(0, T)
            a = t - obs_horizon + 1 + torch.arange(pred_horizon)
            obs_idx.append(self.obs_start[e] + o)
            act_idx.append(self.act_start[e] + a.clamp(0, T - 1))
            past.append(a > T - 1)
        return {"obs": torch.cat(obs_idx), "actions": torch.cat(act_idx), "past_end": torch.cat(past)}

    def rows(self, episodes: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(action rows, obs rows) of `episodes`, for normalisation stats."""
        acts = torch.cat([torch.arange(self.act_start[e], self.act_start[e] + self.lengths[e]) for e in episodes])
        obs = torch.cat([torch.arange(self.obs_start[e], self.obs_start[e] + self.lengths[e] + 1) for e in episodes])
        return acts, obs


def split_episodes(num_episodes: int, val_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Indices 0..num_episodes-1 for training and validation: a seeded shuffle, at least one
    episode on each side when val_fraction > 0 and there are two or more."""
    order = torch.randperm(num_episodes, generator=torch.Generator().manual_seed(seed)).tolist()
    n_val = int(round(val_fraction * num_episodes))
    if val_fraction > 0 and num_episodes >= 2:
        n_val = max(1, min(n_val, num_episodes - 1))
    return sorted(order[n_val:]), sorted(order[:n_val])


def gather(
    store: dict[str, torch.Tensor | None], table: dict[str, torch.Tensor], idx: torch.Tensor, still: torch.Tensor | None
) -> dict[str, torch.Tensor]:
    """A batch for samples `idx` from device-resident `store` (state, images, aux, actions) and index
    `table` (from DemoData.windows): state (B, To, D), images (B, To, K, C, H, W), actions (B, Tp, A),
    aux (B, aux_dim): the auxiliary targets at the current (last) observation. `still` (A,) bool
    (`still_dims`): the dims set to zero where a chunk runs past its episode's end."""
    obs_rows = table["obs"][idx]  # (B, To)
    act_rows = table["actions"][idx]  # (B, Tp)
    if store.get("plan") is None:
        actions = store["actions"][act_rows]
    else:  # perturbed data: the noise-free path, with the corrective action at the current step
        now = table["obs"].shape[1] - 1
        actions = store["plan"][act_rows]
        actions[:, now] = store["actions"][act_rows[:, now]]
    if still is not None:
        past = table["past_end"][idx]  # (B, Tp)
        actions = torch.where(past[..., None] & still, torch.zeros_like(actions), actions)
    batch = {"state": store["state"][obs_rows], "actions": actions}
    if store.get("images") is not None:
        batch["images"] = store["images"][obs_rows]
    if store.get("aux") is not None:
        batch["aux"] = store["aux"][obs_rows[:, -1]]
    return batch
