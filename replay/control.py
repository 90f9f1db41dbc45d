"""Control-mode conversion: one pure function per target mode, plus the batched closed loop.

Every position-type source mode leaves its intent in the recorded state: the arm's drive
targets after step t are where step t sent the arm. So any source trajectory gives one
*reference*, the arm joint targets after each step, (T, n_arm), and converting is, per step,
"which action of the target mode sends the arm from where the mode steps from to the
reference's next targets". Where a mode steps from is ManiSkill's: the measured qpos / TCP pose
for pd_joint_delta_pos, pd_ee_delta_pos, pd_ee_delta_pose and pd_joint_delta_pos_vel, the
previous targets for the `*_target_*` modes. The functions below answer it, one per target
mode, with no env and no state of their own:

    joint_pos_action(reference_q)                            -> pd_joint_pos
    joint_delta_pos_action(start_q, reference_q, s)          -> pd_joint_delta_pos, pd_joint_target_delta_pos
    ee_delta_pos_action(start_tcp, reference_tcp, s)         -> pd_ee_delta_pos, pd_ee_target_delta_pos
    ee_delta_pose_action(start_tcp, reference_tcp, s, r)     -> pd_ee_delta_pose, pd_ee_target_delta_pose
    ee_pose_action(reference_tcp)                            -> pd_ee_pose
    joint_vel_action(q, reference_q, control_freq, s)        -> pd_joint_vel
    joint_pos_vel_action(reference_q)                        -> pd_joint_pos_vel
    joint_delta_pos_vel_action(q, reference_q, s)            -> pd_joint_delta_pos_vel

`conversion(mode)` picks the function by what the mode means (envs/modes.py: its arm space, where
its positions come from, whether it carries velocities), so a new mode with a known meaning
converts with no code here.

Joint functions take (N, n_arm) joint positions; ee functions take (N, 7) root-frame TCP poses
(xyz + wxyz quaternion). They return the arm part of the action in the mode's action space but
*unbounded*; `saturate` scales a normalised action back into its bounds (keeping direction)
and says which rows it had to shrink. Velocity parts are zero targets: the source's PD drives
had zero velocity targets, so (pd_joint_pos_vel) replays it exactly.

`convert_batch` runs this closed loop in a batched env: each step it reads the state the
target mode steps from (measured, or the controller's targets), computes the action towards
the reference's next targets, and steps. Into the measured-state modes the outcome depends on
how the arm tracks, so the loop is what makes them work. A saturated step does not advance
along the reference: the next step aims at the same reference point again (a corrective step),
at most `max_corrections` times per episode. The gripper dim is copied from the source action.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Callable

import numpy as np
import torch
import tyro

from envs.core.pose import pose_mul, quat_conj, quat_mul, quat_to_euler_xyz
from envs.core.tree import stack, to_numpy
from envs.modes import ArmSpace, ControlMode, Position
from replay.batch import start
from replay.trajectory import Episode

# ---- one pure function per target mode ------------------------------------------------------


def joint_pos_action(reference_q: torch.Tensor) -> torch.Tensor:
    """pd_joint_pos: the reference targets themselves. (N, n) -> (N, n)"""
    return reference_q.clone()


def joint_delta_pos_action(start_q: torch.Tensor, reference_q: torch.Tensor, scale: float) -> torch.Tensor:
    """pd_joint_(target_)delta_pos: the joint step from start_q, in units of `scale` rad. (N, n) -> (N, n)"""
    return (reference_q - start_q) / scale


def ee_delta_pos_action(start_tcp: torch.Tensor, reference_tcp: torch.Tensor, scale: float) -> torch.Tensor:
    """pd_ee_(target_)delta_pos: root-frame TCP translation in units of `scale` m. (N, 7) -> (N, 3)"""
    return (reference_tcp[:, :3] - start_tcp[:, :3]) / scale


def ee_delta_pose_action(
    start_tcp: torch.Tensor, reference_tcp: torch.Tensor, pos_scale: float, rot_scale: float
) -> torch.Tensor:
    """pd_ee_(target_)delta_pose: translation (units of pos_scale m), then the XYZ Euler angles of
    the root-frame rotation from the start orientation to the reference's, divided by the
    controller's rotation factor -rot_scale (ManiSkill scales the rotation by its lower bound).
    (N, 7) -> (N, 6)"""
    euler = quat_to_euler_xyz(quat_mul(reference_tcp[:, 3:], quat_conj(start_tcp[:, 3:])))
    return torch.cat(((reference_tcp[:, :3] - start_tcp[:, :3]) / pos_scale, euler / -rot_scale), 1)


def ee_pose_action(reference_tcp: torch.Tensor) -> torch.Tensor:
    """pd_ee_pose: the reference TCP pose as position + XYZ Euler angles. (N, 7) -> (N, 6)"""
    return torch.cat((reference_tcp[:, :3], quat_to_euler_xyz(reference_tcp[:, 3:])), 1)


def joint_vel_action(q: torch.Tensor, reference_q: torch.Tensor, control_freq: float, scale: float) -> torch.Tensor:
    """pd_joint_vel: the velocity that covers reference - q in one control step, in units of
    `scale` rad/s. (N, n) -> (N, n)"""
    return (reference_q - q) * control_freq / scale


def joint_pos_vel_action(reference_q: torch.Tensor) -> torch.Tensor:
    """pd_joint_pos_vel: the reference targets and zero velocity targets. (N, n) -> (N, 2n)"""
    return torch.cat((reference_q, torch.zeros_like(reference_q)), 1)


def joint_delta_pos_vel_action(q: torch.Tensor, reference_q: torch.Tensor, scale: float) -> torch.Tensor:
    """pd_joint_delta_pos_vel: the step from the measured q (units of `scale` rad), then zero
    velocity targets. (N, n) -> (N, 2n)"""
    return torch.cat(((reference_q - q) / scale, torch.zeros_like(q)), 1)


def _shrink(part: torch.Tensor, size: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    over = size[:, 0] > 1.0 + 1e-6
    return torch.where(over[:, None], part / size.clamp_min(1e-12), part), over


def saturate(arm_action: torch.Tensor, mode: ControlMode) -> tuple[torch.Tensor, torch.Tensor]:
    """(bounded action, (N,) bool: rows that had to be shrunk). Normalised modes scale each part
    back into its bounds keeping its direction: translation and joint steps by their largest
    component, an ee rotation by its norm (the controller's own rule for rotations); velocity
    targets of the pos_vel modes are zero. Unnormalised modes are left as they are."""
    hit = torch.zeros(arm_action.shape[0], dtype=torch.bool)
    if not mode.normalized:
        return arm_action, hit
    if mode.end_effector:
        parts = list(arm_action.split(3, 1))
        pos, hit = _shrink(parts[0], parts[0].abs().max(1, keepdim=True).values)
        out = [pos]
        if len(parts) > 1:
            rot, over = _shrink(parts[1], parts[1].norm(dim=1, keepdim=True))
            out.append(rot)
            hit |= over
        return torch.cat(out, 1), hit
    return _shrink(arm_action, arm_action.abs().max(1, keepdim=True).values)


@dataclass(frozen=True)
class Tracker:
    """How the closed loop drives one robot in one target mode: `start()` reads the state the
    mode steps from (joint positions, or a root-frame TCP pose for ee modes), `lift(q)` turns
    arm joint targets into that representation (to take the reference's own steps), and
    `action(start, reference_q)` is the mode's pure function."""

    start: Callable[[], torch.Tensor]
    lift: Callable[[torch.Tensor], torch.Tensor]
    action: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class _Robot:
    """What the pure functions need of the robot being converted."""

    spec: Any  # RobotSpec: the action scales
    fk: Callable[[torch.Tensor], torch.Tensor]  # arm joint positions -> root-frame TCP pose
    control_freq: float


Action = Callable[[torch.Tensor, torch.Tensor, _Robot], torch.Tensor]  # (start, reference_q, robot) -> arm action


def conversion(mode: ControlMode) -> Action | None:
    """The pure function that converts into `mode`, chosen by what the mode means (its arm space,
    where its positions come from, whether it carries velocities); None where none fits."""
    absolute = mode.position is Position.ABSOLUTE
    if mode.space is ArmSpace.JOINT:
        if not mode.sets_position:
            return lambda s, r, k: joint_vel_action(s, r, k.control_freq, k.spec.joint_vel)
        if absolute:
            return (lambda s, r, k: joint_pos_vel_action(r)) if mode.sets_velocity else (lambda s, r, k: joint_pos_action(r))
        if mode.sets_velocity:
            return lambda s, r, k: joint_delta_pos_vel_action(s, r, k.spec.joint_delta)
        return lambda s, r, k: joint_delta_pos_action(s, r, k.spec.joint_delta)
    if mode.sets_velocity or not mode.sets_position or (absolute and mode.position_only):
        return None  # no pure function for these yet
    if absolute:
        return lambda s, r, k: ee_pose_action(k.fk(r))
    if mode.position_only:
        return lambda s, r, k: ee_delta_pos_action(s, k.fk(r), k.spec.ee_delta_pos)
    return lambda s, r, k: ee_delta_pose_action(s, k.fk(r), k.spec.ee_delta_pos, k.spec.ee_delta_rot)


CONVERTIBLE = tuple(m for m in ControlMode if conversion(m) is not None)


def tracker(mode: ControlMode, agent, arm_controller, control_freq: float) -> Tracker:
    """The Tracker of `mode` for one robot (its kinematics, action scales and controller): it
    starts where the mode steps from, the measured state or the controller's targets."""
    act = conversion(mode)
    if act is None:
        raise ValueError(f"cannot convert to {mode.value}; control modes to convert to: {', '.join(m.value for m in CONVERTIBLE)}")
    robot = _Robot(agent.spec, agent.kinematics.tcp_pose, control_freq)
    if mode.end_effector:
        start = (lambda: arm_controller.target_pose.double()) if mode.from_target else (lambda: agent.tcp_pose_root().double())
        lift = robot.fk
    else:
        measured = mode.position in (Position.FROM_MEASURED, Position.NONE)
        start = (lambda: agent.arm_qpos.double()) if measured else (lambda: agent.targets[:, agent.arm].double())
        lift = lambda q: q  # noqa: E731
    return Tracker(start, lift, lambda s, r: act(s, r, robot))


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
class ActionNoise:
    """Perturbations for DART-style demonstrations (Laskey et al. 2017). With std > 0 every step
    executes the converted action plus noise, and the episode also keeps the noise-free action
    the tracker computed at that step (`expert_actions`): from the state the noise pushed it to,
    the action back towards the source's path, a corrective label that noise-free demos never
    show. The noise is Gaussian in the target mode's action units (normalised for the delta
    modes), on the arm dims only (never the gripper), and correlated over steps (AR(1) with
    `correlation`) so that a perturbation persists for a few steps, as a policy's own error
    does. Each episode draws from its own generator (seed, episode seed): the same noise
    whatever the batching."""

    std: Annotated[float, tyro.conf.arg(name="action-noise", prefix_name=False, metavar="STD")] = 0.0
    """DART-style perturbed conversion: execute each converted action plus Gaussian noise of this std
    (target mode's action units, arm only) and keep the noise-free corrective actions as
    expert_actions, which policies train on (0: none)"""
    correlation: Annotated[float, tyro.conf.arg(name="noise-correlation", prefix_name=False)] = 0.8
    """AR(1) correlation of --action-noise over steps, in [0, 1)"""
    seed: Annotated[int, tyro.conf.arg(name="noise-seed", prefix_name=False)] = 0
    """seed of --action-noise"""

    def __post_init__(self) -> None:
        if not self.std >= 0:
            raise ValueError(f"--action-noise must be >= 0, got {self.std}")
        if not 0 <= self.correlation < 1:
            raise ValueError(f"noise correlation must be in [0, 1), got {self.correlation}")

    def generators(self, episode_seeds: list[int]) -> list[torch.Generator]:
        return [torch.Generator().manual_seed((self.seed * 1_000_003 + int(s)) % 2**63) for s in episode_seeds]


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
    """(T + 1, n_arm) arm drive targets recorded after each step (row 0: the initial ones); a
    state without drive targets (ManiSkill's) has them at qpos."""
    targets = episode.env_states.get("drive_targets", {}).get(agent_name)  # (T + 1, dof)
    if targets is None:
        targets = episode.env_states["articulations"][agent_name][:, 13 : 13 + dof]
    return targets[:, arm]


def _env_rows(tree, i: int, steps: int):
    """Env i's first `steps` rows of a tree of (S, N, ...) arrays."""
    if isinstance(tree, dict):
        return {k: _env_rows(v, i, steps) for k, v in tree.items()}
    return tree[:steps, i].copy()


def _padded(rows: list[np.ndarray]) -> np.ndarray:
    """Per-episode (T_i, ...) arrays -> (N, max T_i, ...), each repeating its last row."""
    longest = max(len(r) for r in rows)
    return np.stack([np.concatenate((r, np.repeat(r[-1:], longest - len(r), 0))) for r in rows])


def convert_batch(
    env,
    episodes: list[Episode],
    mode: ControlMode,
    limits: ConvertLimits,
    record_obs: bool = False,
    on_done: Callable[[int], None] | None = None,
    noise: ActionNoise | None = None,
) -> list[Converted]:
    """Converts len(episodes) <= num_envs episodes at once in `env` (built in the target control
    mode). Episodes that finish early hold still until the batch ends; their recorded steps are
    their own. With record_obs, the env's observations (a state obs mode: no rendering) are
    kept as the episodes' obs. `on_done(n)` is called as episodes finish. With `noise` (std > 0)
    the recorded `actions` are the perturbed ones that were executed (the episode replays) and
    `expert_actions` the tracker's noise-free ones, and `reference_actions` the source path's own
    step at each point (from the reference's current targets to its next: what the expert goes on
    doing once it has corrected; see ActionNoise)."""
    base = env.unwrapped
    agent = base.agent
    n, k = base.num_envs, len(episodes)
    padded = start(env, episodes)
    dof, name, rows = agent.dof, agent.name, np.arange(n)
    lengths = np.array([e.length for e in padded])
    refs = _padded([reference_targets(e, name, agent.arm, dof) for e in padded])  # (N, T + 1, n_arm)
    g = base.controller.action_dim - base.controller.arm_dim  # gripper dims: 1, or 0 without a gripper
    grips = _padded([e.actions[:, e.actions.shape[1] - g :] for e in padded])  # (N, T, g) source gripper actions
    q = torch.from_numpy(_padded([e.env_states["articulations"][name][:, 13 : 13 + dof] for e in padded])).double()
    root = agent.root_pose.double()[:, None].expand(n, q.shape[1], 7)
    src_tcp = pose_mul(root, agent.kinematics.tcp_pose(q[..., agent.arm].reshape(-1, len(agent.arm))).reshape(n, -1, 7))
    src_tcp = src_tcp[..., :3].float().numpy()  # (N, T + 1, 3) env frame
    src_actors = {a: _padded([e.env_states["actors"][a][:, :3] for e in padded]) for a in padded[0].env_states["actors"]}
    track = tracker(mode, agent, base.controller.arm, base.control_freq)
    noisy = noise is not None and noise.std > 0
    if noisy:
        gens, keep, drift = noise.generators([e.seed for e in padded]), noise.correlation, None

    states = [to_numpy(base.get_state_dict())]
    obs_hist = [to_numpy(base.get_obs(base.evaluate()))] if record_obs else []
    actions, labels, plans, success, fail, rewards = [], [], [], [], [], []
    pos = np.zeros(n, int)  # the next source action to imitate
    corrections, settled, recorded = np.zeros(n, int), np.zeros(n, int), np.zeros(n, int)
    lost = np.full(n, -1)
    max_tcp, max_obj = np.zeros(n), np.zeros(n)
    done = np.arange(n) >= k  # padding envs never record
    too_long = np.zeros(n, bool)
    # the time limit; a source that ran past it (ManiSkill's motion-planning demos step on after
    # truncation) may take as long as it did, plus its corrective and settling steps
    max_len = np.where(lengths > base.max_episode_steps, lengths + limits.max_corrections + limits.settle_steps,
                       base.max_episode_steps)
    while not done.all():
        ref = torch.from_numpy(refs[rows, np.minimum(pos + 1, lengths)]).double()
        arm, hit = saturate(track.action(track.start(), ref).float(), mode)
        grip = torch.from_numpy(grips[rows, np.minimum(pos, lengths - 1)]).float()  # (N, g)
        action = torch.cat((arm, grip), 1)
        if noisy:
            labels.append(action.numpy())
            ref_now = torch.from_numpy(refs[rows, np.minimum(pos, lengths)]).double()
            plans.append(torch.cat((saturate(track.action(track.lift(ref_now), ref).float(), mode)[0], grip), 1).numpy())
            fresh = torch.stack([torch.randn(arm.shape[1], generator=g) for g in gens]) * noise.std
            drift = fresh if drift is None else keep * drift + (1 - keep * keep) ** 0.5 * fresh
            action = torch.cat((saturate(arm + drift, mode)[0], grip), 1)
        obs, reward, _, _, info = base.step(action)
        states.append(to_numpy(base.get_state_dict()))
        if record_obs:
            obs_hist.append(to_numpy(obs))
        actions.append(action.numpy())
        ok = info["success"].numpy()
        success.append(ok)
        fail.append(info["fail"].numpy())
        rewards.append(reward.numpy())

        active = ~done
        recorded += active
        following = active & (pos < lengths)
        correcting = following & hit.numpy() & (corrections < limits.max_corrections)
        corrections += correcting
        advanced = following & ~correcting
        pos += advanced
        settled += active & ~following
        # how far the converted run is from the source where it advanced
        tcp_err = np.linalg.norm(agent.tcp_pose[:, :3].numpy() - src_tcp[rows, pos], axis=1)
        obj_err = np.zeros(n)
        for a, src in src_actors.items():
            obj_err = np.maximum(obj_err, np.linalg.norm(states[-1]["actors"][a][:, :3] - src[rows, pos], axis=1))
        max_tcp = np.where(advanced, np.maximum(max_tcp, tcp_err), max_tcp)
        max_obj = np.where(advanced, np.maximum(max_obj, obj_err), max_obj)
        strayed = advanced & (lost < 0) & ((tcp_err > limits.tcp_tolerance) | (obj_err > limits.object_tolerance))
        lost = np.where(strayed, pos, lost)

        finished = active & (pos >= lengths) & (ok | (settled >= limits.settle_steps))
        over = active & ~finished & (recorded >= max_len)
        too_long |= over
        finished |= over
        done |= finished
        if on_done and finished.any():
            on_done(int(finished.sum()))

    states_all = stack(states)  # (S + 1, N, ...)
    obs_all = stack(obs_hist) if record_obs else None
    steps = (np.stack(actions), np.stack(success), np.stack(fail), np.stack(rewards))  # (S, N, ...)
    expert, plan = (np.stack(labels), np.stack(plans)) if noisy else (None, None)
    out = []
    for i in range(k):
        L = int(recorded[i])
        act, suc, fal, rew = (x[:L, i] for x in steps)
        good = bool(suc[-1]) and not too_long[i]
        if good:
            reason = "success"
        else:
            limit = f"max_episode_steps ({max_len[i]})" if max_len[i] == base.max_episode_steps else f"{max_len[i]}"
            why = f"needs more than {limit} steps" if too_long[i] else "no success at the end"
            where = f"tracking lost at step {lost[i]}" if lost[i] >= 0 else "tracking kept"
            reason = (f"{why} ({where}; max error TCP {max_tcp[i] * 100:.1f} cm, objects {max_obj[i] * 100:.1f} cm; "
                      f"{corrections[i]} corrective steps)")
        e = episodes[i]
        ep = Episode(
            actions=act.astype(np.float32),
            expert_actions=expert[:L, i].astype(np.float32) if noisy else None,
            reference_actions=plan[:L, i].astype(np.float32) if noisy else None,
            terminated=suc | fal,
            truncated=np.arange(1, L + 1) >= base.max_episode_steps,
            success=suc.copy(),
            fail=fal.copy(),
            rewards=rew.astype(np.float32),
            env_states=_env_rows(states_all, i, L + 1),
            obs=_env_rows(obs_all, i, L + 1) if record_obs else None,
            seed=e.seed,
            reset_kwargs=dict(e.reset_kwargs),
            info={**e.info, "corrective_steps": int(corrections[i])},
        )
        out.append(Converted(ep, good, reason, int(lost[i]) if lost[i] >= 0 else None, float(max_tcp[i]), float(max_obj[i])))
    return out


__all__ = [
    "CONVERTIBLE",
    "ActionNoise",
    "conversion",
    "ConvertLimits",
    "Converted",
    "convert_batch",
    "ee_delta_pos_action",
    "ee_delta_pose_action",
    "ee_pose_action",
    "joint_delta_pos_action",
    "joint_delta_pos_vel_action",
    "joint_pos_action",
    "joint_pos_vel_action",
    "joint_vel_action",
    "tracker",
    "reference_targets",
    "saturate",
]
