"""Control-mode conversion: one pure function per target mode, plus the batched closed loop.

Every position-type source mode (pd_joint_pos, pd_joint_delta_pos, the ee modes) leaves its
intent in the recorded state: the arm's drive targets after step t are where step t sent the
arm. So any source trajectory gives one *reference*, the arm joint targets after each step,
(T, n_arm), and converting is, per step, "which action of the target mode moves the controller
from its current joint targets to the reference's next ones". The functions below answer that,
one per target mode, with no env and no state of their own:

    joint_pos_action(current_q, reference_q)            -> pd_joint_pos
    joint_delta_pos_action(current_q, reference_q, s)   -> pd_joint_delta_pos
    ee_delta_pos_action(current_tcp, reference_tcp, s)  -> pd_ee_delta_pos
    ee_delta_pose_action(current_tcp, reference_tcp, s) -> pd_ee_delta_pose
    ee_pose_action(reference_tcp)                       -> pd_ee_pose

Joint functions take (N, n_arm) joint targets; ee functions take (N, 7) root-frame TCP poses
(xyz + wxyz quaternion), which is what the ee controllers read and write. They return the arm
part of the action *unbounded*; `saturate` scales a delta action back into [-1, 1] (keeping its
direction) and says which rows it had to shrink.

`convert_batch` runs this closed loop in a batched env: each step it reads the controller's
current joint targets (the state the ee controllers step from), computes the action towards the
reference's next targets, and steps. A saturated step does not advance along the reference: the
next step aims at the same reference point again (a corrective step), at most `max_corrections`
times per episode. The gripper dim is copied from the source action.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from envs.core.pose import pose_mul, quat_conj, quat_mul, quat_to_axis_angle
from envs.modes import ControlMode
from replay.trajectory import Episode

# ---- one pure function per target mode ------------------------------------------------------


def joint_pos_action(current_q: torch.Tensor, reference_q: torch.Tensor) -> torch.Tensor:
    """pd_joint_pos: the reference targets themselves. (N, n) -> (N, n)"""
    return reference_q.clone()


def joint_delta_pos_action(current_q: torch.Tensor, reference_q: torch.Tensor, scale: float) -> torch.Tensor:
    """pd_joint_delta_pos: the joint step in units of `scale` rad. (N, n) -> (N, n)"""
    return (reference_q - current_q) / scale


def ee_delta_pos_action(current_tcp: torch.Tensor, reference_tcp: torch.Tensor, scale: float) -> torch.Tensor:
    """pd_ee_delta_pos: root-frame TCP translation in units of `scale` m. (N, 7) -> (N, 3)"""
    return (reference_tcp[:, :3] - current_tcp[:, :3]) / scale


def ee_delta_pose_action(
    current_tcp: torch.Tensor, reference_tcp: torch.Tensor, pos_scale: float, rot_scale: float
) -> torch.Tensor:
    """pd_ee_delta_pose: translation (units of pos_scale m) then the rotation vector, root-frame
    axes, that turns the current TCP orientation into the reference's (units of rot_scale rad).
    (N, 7) -> (N, 6)"""
    rot = quat_to_axis_angle(quat_mul(reference_tcp[:, 3:], quat_conj(current_tcp[:, 3:])))
    return torch.cat(((reference_tcp[:, :3] - current_tcp[:, :3]) / pos_scale, rot / rot_scale), 1)


def ee_pose_action(reference_tcp: torch.Tensor) -> torch.Tensor:
    """pd_ee_pose: the reference TCP pose as position + rotation vector. (N, 7) -> (N, 6)"""
    return torch.cat((reference_tcp[:, :3], quat_to_axis_angle(reference_tcp[:, 3:])), 1)


def saturate(arm_action: torch.Tensor, mode: ControlMode) -> tuple[torch.Tensor, torch.Tensor]:
    """(bounded action, (N,) bool: rows that had to be shrunk). Delta modes scale each part
    (translation, rotation, joint step) back into [-1, 1] keeping its direction; absolute modes
    are never saturated here (the controller clips them to its own bounds)."""
    if mode not in DELTA_MODES:
        return arm_action, torch.zeros(arm_action.shape[0], dtype=torch.bool)
    parts = arm_action.split(3, 1) if mode is not ControlMode.PD_JOINT_DELTA_POS else (arm_action,)
    out, hit = [], torch.zeros(arm_action.shape[0], dtype=torch.bool)
    for p in parts:
        peak = p.abs().max(1, keepdim=True).values
        over = peak[:, 0] > 1.0 + 1e-6
        hit |= over
        out.append(torch.where(over[:, None], p / peak.clamp_min(1e-12), p))
    return torch.cat(out, 1), hit


DELTA_MODES = (ControlMode.PD_JOINT_DELTA_POS, ControlMode.PD_EE_DELTA_POS, ControlMode.PD_EE_DELTA_POSE)
CONVERTIBLE = (
    ControlMode.PD_JOINT_POS,
    ControlMode.PD_JOINT_DELTA_POS,
    ControlMode.PD_EE_DELTA_POS,
    ControlMode.PD_EE_DELTA_POSE,
    ControlMode.PD_EE_POSE,
)


def action_function(mode: ControlMode, agent) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """(current arm targets, reference arm targets) -> unbounded arm action of `mode`, for one
    robot (its kinematics and action scales)."""
    spec, fk = agent.spec, agent.kinematics.tcp_pose
    table = {
        ControlMode.PD_JOINT_POS: lambda q, r: joint_pos_action(q, r),
        ControlMode.PD_JOINT_DELTA_POS: lambda q, r: joint_delta_pos_action(q, r, spec.joint_delta),
        ControlMode.PD_EE_DELTA_POS: lambda q, r: ee_delta_pos_action(fk(q), fk(r), spec.ee_delta_pos),
        ControlMode.PD_EE_DELTA_POSE: lambda q, r: ee_delta_pose_action(fk(q), fk(r), spec.ee_delta_pos, spec.ee_delta_rot),
        ControlMode.PD_EE_POSE: lambda q, r: ee_pose_action(fk(r)),
    }
    return table[mode]


# ---- the batched closed loop ------------------------------------------------------------------


@dataclass
class ConvertLimits:
    """Bounds on how far a converted episode may stray from its source."""

    max_corrections: int = 20  # extra steps per episode where a saturated action re-aims
    settle_steps: int = 10  # hold steps after the source's end while waiting for success
    tcp_tolerance: float = 0.01  # m: TCP further than this from the source's = tracking lost
    object_tolerance: float = 0.02  # m: any object further than this from the source's

    def __post_init__(self) -> None:
        if self.max_corrections < 0 or self.settle_steps < 0:
            raise ValueError("max_corrections and settle_steps must be >= 0")
        if self.tcp_tolerance <= 0 or self.object_tolerance <= 0:
            raise ValueError("tcp_tolerance and object_tolerance must be > 0")


@dataclass
class Converted:
    """One episode's conversion: the new episode (also when it failed) and why it failed."""

    episode: Episode
    success: bool
    reason: str  # "success" or why not
    lost_at: int | None  # first source step where tracking was lost, None if never
    max_tcp_error: float
    max_object_error: float


def reference_targets(episode: Episode, agent_name: str, arm: list[int], dof: int) -> np.ndarray:
    """(T + 1, n_arm) arm drive targets recorded after each step (row 0: the initial ones)."""
    art = episode.env_states["articulations"][agent_name]  # (T + 1, 13 + 3 dof)
    return art[:, 13 + 2 * dof : 13 + 3 * dof][:, arm]


def _rows(tree, i: int):
    if not isinstance(tree, dict):
        return np.array(tree[i])
    return {k: _rows(v, i) for k, v in tree.items()}


def _to_numpy(tree):
    return {k: _to_numpy(v) for k, v in tree.items()} if isinstance(tree, dict) else tree.numpy()


def _stack(rows: list):
    if isinstance(rows[0], dict):
        return {k: _stack([r[k] for r in rows]) for k in rows[0]}
    return np.stack(rows)


class _Track:
    """Per-episode bookkeeping of the closed loop."""

    def __init__(self, ep: Episode, ref: np.ndarray, source_tcp: np.ndarray):
        self.ep, self.ref, self.source_tcp = ep, ref, source_tcp
        self.k = 0  # the next source action to imitate
        self.corrections = 0
        self.settled = 0
        self.done = False
        self.actions, self.states, self.obs, self.success, self.fail, self.rewards = [], [], [], [], [], []
        self.lost_at: int | None = None
        self.max_tcp = self.max_obj = 0.0
        self.why = ""


def convert_batch(
    env,
    episodes: list[Episode],
    mode: ControlMode,
    limits: ConvertLimits,
    record_obs: bool = False,
    on_done: Callable[[int], None] | None = None,
) -> list[Converted]:
    """Converts len(episodes) <= num_envs episodes at once in `env` (built in the target control
    mode). Episodes that finish early hold still until the batch ends; their recorded steps are
    their own. With record_obs, the env's observations (a state obs mode: no rendering) are
    kept as the episodes' obs. `on_done(1)` is called as each episode finishes."""
    base = env.unwrapped
    agent = base.agent
    n, k = base.num_envs, len(episodes)
    padded = episodes + [episodes[-1]] * (n - k)
    base.reset(seed=[e.seed for e in padded])
    base.set_state_dict(
        {g: {name: torch.from_numpy(np.stack([e.env_states[g][name][0] for e in padded])) for name in padded[0].env_states[g]}
         for g in padded[0].env_states}
    )
    dof = agent.dof
    fk = agent.kinematics.tcp_pose
    tracks = []
    for i, e in enumerate(padded):
        ref = reference_targets(e, agent.name, agent.arm, dof)
        q = e.env_states["articulations"][agent.name][:, 13 : 13 + dof][:, agent.arm]
        root = agent.root_pose[i : i + 1].double()
        tcp = pose_mul(root.expand(len(q), 7), fk(torch.from_numpy(q).double()))  # (T + 1, 7) env frame
        tracks.append(_Track(e, ref, tcp.float().numpy()))
    act_fn = action_function(mode, agent)
    actor_names = list(padded[0].env_states["actors"])
    state = _to_numpy(base.get_state_dict())
    obs = _to_numpy(base.get_obs(base.evaluate())) if record_obs else None
    for i, tr in enumerate(tracks):
        tr.states.append(_rows(state, i))
        if record_obs:
            tr.obs.append(_rows(obs, i))
    max_len = base.max_episode_steps
    while not all(t.done for t in tracks[:k]):
        cur = agent.targets[:, agent.arm].double()  # (N, n_arm)
        ref = torch.from_numpy(np.stack([t.ref[min(t.k + 1, len(t.ref) - 1)] for t in tracks])).double()
        arm, hit = saturate(act_fn(cur, ref).float(), mode)
        grip = torch.tensor([[t.ep.actions[min(t.k, t.ep.length - 1), -1]] for t in tracks], dtype=torch.float32)
        action = torch.cat((arm, grip), 1)
        obs, reward, _, _, info = base.step(action)
        obs = _to_numpy(obs) if record_obs else None
        state = _to_numpy(base.get_state_dict())
        tcp = agent.tcp_pose.numpy()  # (N, 7) env frame, from measured qpos (cached by evaluate)
        for i, tr in enumerate(tracks[:k]):
            if tr.done:
                continue
            tr.actions.append(action[i].numpy().copy())
            tr.states.append(_rows(state, i))
            if record_obs:
                tr.obs.append(_rows(obs, i))
            tr.success.append(bool(info["success"][i]))
            tr.fail.append(bool(info["fail"][i]))
            tr.rewards.append(float(reward[i]))
            if tr.k < tr.ep.length:
                if hit[i] and tr.corrections < limits.max_corrections:
                    tr.corrections += 1
                else:
                    tr.k += 1
                    _track_error(tr, tcp[i], {a: state["actors"][a][i, :3] for a in actor_names}, limits)
            else:
                tr.settled += 1
            finished = tr.k >= tr.ep.length and (tr.success[-1] or tr.settled >= limits.settle_steps)
            if len(tr.actions) >= max_len and not finished:
                tr.why = f"needs more than max_episode_steps ({max_len}) steps"
                finished = True
            tr.done = finished
            if finished and on_done:
                on_done(1)
    return [_result(t, max_len) for t in tracks[:k]]


def _track_error(tr: _Track, tcp: np.ndarray, actors: dict[str, np.ndarray], limits: ConvertLimits) -> None:
    """Compares the converted run with the source after source step tr.k."""
    tcp_err = float(np.linalg.norm(tcp[:3] - tr.source_tcp[tr.k, :3]))
    obj_err = max((float(np.linalg.norm(p - tr.ep.env_states["actors"][a][tr.k, :3])) for a, p in actors.items()), default=0.0)
    tr.max_tcp, tr.max_obj = max(tr.max_tcp, tcp_err), max(tr.max_obj, obj_err)
    if tr.lost_at is None and (tcp_err > limits.tcp_tolerance or obj_err > limits.object_tolerance):
        tr.lost_at = tr.k


def _result(tr: _Track, max_len: int) -> Converted:
    ok = bool(tr.success[-1]) and not tr.why
    if ok:
        reason = "success"
    else:
        where = f"tracking lost at step {tr.lost_at}" if tr.lost_at is not None else "tracking kept"
        why = tr.why or "no success at the end"
        reason = f"{why} ({where}; max error TCP {tr.max_tcp * 100:.1f} cm, objects {tr.max_obj * 100:.1f} cm"
        reason += f"; {tr.corrections} corrective steps)"
    T = len(tr.actions)
    ep = Episode(
        actions=np.stack(tr.actions).astype(np.float32),
        terminated=np.array(tr.success, bool) | np.array(tr.fail, bool),
        truncated=np.arange(1, T + 1) >= max_len,
        success=np.array(tr.success, bool),
        fail=np.array(tr.fail, bool),
        rewards=np.array(tr.rewards, np.float32),
        env_states=_stack(tr.states),
        obs=_stack(tr.obs) if tr.obs else None,
        seed=tr.ep.seed,
        reset_kwargs=dict(tr.ep.reset_kwargs),
        info={**tr.ep.info, "corrective_steps": tr.corrections},
    )
    return Converted(ep, ok, reason, tr.lost_at, tr.max_tcp, tr.max_obj)


__all__ = [
    "CONVERTIBLE",
    "ConvertLimits",
    "Converted",
    "convert_batch",
    "ee_delta_pos_action",
    "ee_delta_pose_action",
    "ee_pose_action",
    "joint_delta_pos_action",
    "joint_pos_action",
    "reference_targets",
    "saturate",
]
